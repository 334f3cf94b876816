use std::time::Duration;

use fogline_client::{ClientError, ClientOptions, ErrorCode, HeadersBuilder, PublishRecord};

use crate::fake::Config;
use crate::setup;

#[tokio::test]
async fn many_records_go_out_in_few_frames() {
    // Single-threaded: the writer runs only when the publisher yields (at
    // the flush), so batching is deterministic here. 20,000 records of
    // ~30 encoded bytes fill ~10 frames of 64 KiB.
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    let n = 20_000;
    for i in 0..n {
        client
            .publish("bulk/t", format!("record {i:06}"))
            .await
            .unwrap();
    }
    client.flush().await.unwrap();
    let stats = fake.wait_for("all records", |s| s.records == n).await;
    assert!(
        (8..=12).contains(&stats.publish_frames),
        "{} frames for {n} records",
        stats.publish_frames
    );
}

#[tokio::test]
async fn interleaved_topics_are_batched_per_topic() {
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    let n = 4_000;
    for i in 0..n {
        client
            .publish(&format!("mix/{}", i % 4), b"payload")
            .await
            .unwrap();
    }
    client.flush().await.unwrap();
    let stats = fake.wait_for("all records", |s| s.records == n).await;
    assert_eq!(stats.publish_frames, 4, "one frame per topic");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_batch_while_the_writer_is_busy() {
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    let n = 200_000;
    for i in 0..n {
        client
            .publish("bulk/t", format!("record {i:06}"))
            .await
            .unwrap();
    }
    client.flush().await.unwrap();
    let stats = fake.wait_for("all records", |s| s.records == n).await;
    // However the threads interleave, a write syscall takes far longer
    // than appending a record, so frames carry many records on average.
    assert!(
        stats.publish_frames * 10 < n,
        "{} frames for {n} records",
        stats.publish_frames
    );
}

#[tokio::test]
async fn a_lone_record_is_sent_without_waiting_for_a_batch() {
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    client.publish("slow/t", b"one").await.unwrap();
    fake.wait_for("first record", |s| s.records == 1).await;
    client.publish("slow/t", b"two").await.unwrap();
    let stats = fake.wait_for("second record", |s| s.records == 2).await;
    assert_eq!(stats.publish_frames, 2);
}

#[tokio::test]
async fn acked_publish_succeeds_and_pipelines() {
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    let headers = HeadersBuilder::new().add("type", "drone").finish().unwrap();
    let rec = PublishRecord {
        topic: "acked/t".into(),
        headers,
        payload: "p".into(),
        timestamp: Some(5),
        priority: true,
    };
    client.publish_acked(&rec).await.unwrap();
    let mut pending = Vec::new();
    for _ in 0..200 {
        pending.push(client.send_acked(&rec).await.unwrap());
    }
    for ack in pending {
        ack.await.unwrap();
    }
    client.flush().await.unwrap();
    assert_eq!(fake.stats().records, 201);
}

#[tokio::test]
async fn refused_publish_maps_the_server_error() {
    let (_fake, client) = setup(Config::default(), ClientOptions::default()).await;
    let err = client
        .publish_acked(&PublishRecord::new("reject/t", "x"))
        .await
        .unwrap_err();
    match err {
        ClientError::Server { code, message } => {
            assert_eq!(code, ErrorCode::InvalidTopic);
            assert_eq!(message, "rejected");
        }
        other => panic!("expected a server error, got {other}"),
    }
    // The connection survives a refused request.
    client
        .publish_acked(&PublishRecord::new("ok/t", "x"))
        .await
        .unwrap();
}

#[tokio::test]
async fn local_checks_reject_bad_topics_and_oversized_records() {
    let config = Config {
        max_message: 100,
        ..Config::default()
    };
    let (fake, client) = setup(config, ClientOptions::default()).await;
    assert!(matches!(
        client.publish("a/+", b"x").await,
        Err(ClientError::InvalidTopic(_))
    ));
    assert!(matches!(
        client.publish("", b"x").await,
        Err(ClientError::InvalidTopic(_))
    ));
    assert!(matches!(
        client.publish("a", vec![0u8; 101]).await,
        Err(ClientError::MessageTooLarge {
            size: 101,
            max: 100
        })
    ));
    client.publish("a", vec![0u8; 100]).await.unwrap();
    client.flush().await.unwrap();
    assert_eq!(
        fake.wait_for("the record", |s| s.records == 1)
            .await
            .records,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_buffer_makes_publish_wait() {
    let config = Config {
        read: false,
        ..Config::default()
    };
    let opts = ClientOptions {
        max_buffered_bytes: 64 << 10,
        ..ClientOptions::default()
    };
    let (_fake, client) = setup(config, opts).await;
    let payload = vec![7u8; 16 << 10];
    // The kernel's socket buffers take some megabytes; past them and the
    // client's 64 KiB bound, publish must block rather than grow memory.
    let blocked = tokio::time::timeout(Duration::from_secs(3), async {
        for _ in 0..4096 {
            client.publish("stall/t", &payload).await.unwrap();
        }
    })
    .await;
    assert!(blocked.is_err(), "64 MiB went into a stalled connection");
}

#[tokio::test]
async fn close_flushes_and_later_calls_fail() {
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    let other = client.clone();
    for _ in 0..10 {
        client.publish("c/t", b"x").await.unwrap();
    }
    client.close().await.unwrap();
    fake.wait_for("all records", |s| s.records == 10).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(matches!(
        other.publish("c/t", b"y").await,
        Err(ClientError::Closed)
    ));
    assert!(matches!(other.ping().await, Err(ClientError::Closed)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tracked_publishing_reports_failures_at_flush() {
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    for i in 0..1000u32 {
        client
            .publish_tracked(&PublishRecord::new("tracked/t", i.to_le_bytes().to_vec()))
            .await
            .unwrap();
    }
    client.flush().await.unwrap();
    assert_eq!(fake.stats().records, 1000);
    client
        .publish_tracked(&PublishRecord::new("reject/t", "x"))
        .await
        .unwrap();
    let err = client.flush().await.unwrap_err();
    assert_eq!(err.server_code(), Some(ErrorCode::InvalidTopic));
    // The failure is reported once.
    client.flush().await.unwrap();
}

#[tokio::test]
async fn unanswered_acked_batches_hold_back_further_ones() {
    let opts = ClientOptions {
        max_inflight_acks: 2,
        ..ClientOptions::default()
    };
    let (_fake, client) = setup(Config::default(), opts).await;
    let _a = client
        .send_acked(&PublishRecord::new("hold/a", "1"))
        .await
        .unwrap();
    let _b = client
        .send_acked(&PublishRecord::new("hold/b", "2"))
        .await
        .unwrap();
    let c = PublishRecord::new("hold/c", "3");
    let third = client.send_acked(&c);
    assert!(
        tokio::time::timeout(Duration::from_millis(200), third)
            .await
            .is_err(),
        "a third acked batch went out with two unanswered"
    );
    // Fire-and-forget publishing is not held back.
    client.publish("free/t", b"x").await.unwrap();
}
