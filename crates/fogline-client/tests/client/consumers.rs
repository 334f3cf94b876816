use std::time::Duration;

use fogline_client::{ClientError, ClientOptions, ConsumerOptions, ErrorCode, StartPosition};

use crate::fake::Config;
use crate::setup;

#[tokio::test]
async fn fetch_and_ack() {
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    for i in 0..5u8 {
        client.publish(&format!("f/{i}"), [i]).await.unwrap();
    }
    client.flush().await.unwrap();
    fake.wait_for("records", |s| s.records == 5).await;
    let mut consumer = client
        .consumer("s", ConsumerOptions::default())
        .await
        .unwrap();
    let batch = consumer.fetch(3, Duration::from_millis(10)).await.unwrap();
    let offsets: Vec<u64> = batch.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, [0, 1, 2]);
    assert_eq!(batch[1].topic, "f/1");
    assert_eq!(&batch[2].payload[..], &[2]);
    assert_eq!(batch[0].delivery_count, 1);
    consumer.ack(&offsets).unwrap();
    let rest = consumer.fetch(10, Duration::from_millis(10)).await.unwrap();
    assert_eq!(rest.len(), 2);
    assert_eq!(consumer.next_offset(), 5);
    assert!(consumer
        .fetch(10, Duration::from_millis(10))
        .await
        .unwrap()
        .is_empty());
    fake.wait_for("acks", |s| s.acked_offsets == [0, 1, 2])
        .await;
    consumer.close().unwrap();
    fake.wait_for("close", |s| s.closes == 1).await;
}

#[tokio::test]
async fn push_consumer_tops_up_credit() {
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    for i in 0..10u8 {
        client.publish("p/x", [i]).await.unwrap();
    }
    client.flush().await.unwrap();
    fake.wait_for("records", |s| s.records == 10).await;
    let opts = ConsumerOptions {
        name: "durable".into(),
        start: StartPosition::Offset(2),
        push_credit: 4,
        ..ConsumerOptions::default()
    };
    let mut consumer = client.consumer("s", opts).await.unwrap();
    for want in 2..10u64 {
        let r = tokio::time::timeout(Duration::from_secs(5), consumer.recv())
            .await
            .expect("push stalled: credit not topped up")
            .unwrap();
        assert_eq!(r.offset, want);
    }
    assert!(fake.stats().credits >= 4);
    assert!(matches!(
        consumer.fetch(1, Duration::ZERO).await,
        Err(ClientError::Usage(_))
    ));
}

#[tokio::test]
async fn unknown_stream_is_a_server_error() {
    let (_fake, client) = setup(Config::default(), ClientOptions::default()).await;
    let err = client
        .consumer("missing", ConsumerOptions::default())
        .await
        .err()
        .unwrap();
    assert_eq!(err.server_code(), Some(ErrorCode::UnknownStream));
}

/// A pushed record counts as received when it arrives, not when the application takes it:
/// an ephemeral consumer re-opened after a reconnect starts past what waits in its channel,
/// so those records do not come twice.
#[tokio::test]
async fn pushed_records_move_the_next_offset_on_arrival() {
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    for i in 0..5u8 {
        client.publish("p/x", [i]).await.unwrap();
    }
    client.flush().await.unwrap();
    fake.wait_for("records", |s| s.records == 5).await;
    let opts = ConsumerOptions {
        push_credit: 100,
        ..ConsumerOptions::default()
    };
    let mut consumer = client.consumer("s", opts).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while consumer.next_offset() < 5 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "next_offset {}",
            consumer.next_offset()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for want in 0..5u64 {
        assert_eq!(consumer.recv().await.unwrap().offset, want);
    }
    assert_eq!(consumer.next_offset(), 5);
}
