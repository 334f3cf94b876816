use std::time::Duration;

use fogline_client::{
    ClientError, ClientOptions, ConsumerOptions, PublishRecord, Reconnect, SubscribeOptions,
};

use crate::fake::Config;
use crate::setup;

pub fn fast_reconnect() -> ClientOptions {
    ClientOptions {
        reconnect: Some(Reconnect {
            initial: Duration::from_millis(10),
            max: Duration::from_millis(100),
            max_attempts: None,
        }),
        ..ClientOptions::default()
    }
}

/// A fake on a unix socket (small buffers) that reads nothing after the handshake, so a
/// large record blocks the client's writer, and a client that reconnects fast.
async fn stalled_unix_fake() -> (tempfile::TempDir, crate::fake::Fake, fogline_client::Client) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        read: false,
        max_message: 4 << 20,
        max_frame: 8 << 20,
    };
    let fake = crate::fake::Fake::start_unix(config, &dir.path().join("f.sock")).await;
    let client = fogline_client::Client::connect(&fake.addr, fast_reconnect())
        .await
        .unwrap();
    (dir, fake, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnects_resubscribes_and_reopens() {
    let (fake, client) = setup(Config::default(), fast_reconnect()).await;
    let mut sub = client
        .subscribe("r/#", SubscribeOptions::default())
        .await
        .unwrap();
    client.publish("r/1", b"before").await.unwrap();
    assert_eq!(&sub.recv().await.unwrap().payload[..], b"before");
    let mut consumer = client
        .consumer("s", ConsumerOptions::default())
        .await
        .unwrap();
    assert_eq!(consumer.fetch(10, Duration::ZERO).await.unwrap().len(), 1);

    fake.drop_connections();
    fake.wait_for("second hello", |s| s.hellos == 2).await;
    let stats = fake
        .wait_for("re-subscribe and re-open", |s| {
            s.subscribes.len() == 2 && s.opens.len() == 2
        })
        .await;
    assert_eq!(stats.subscribes[0], stats.subscribes[1], "same sub_id");
    // The ephemeral consumer resumes after what it had received.
    assert_eq!(stats.opens[1].1, fogline_client::StartPosition::Offset(1));

    client.publish("r/2", b"after").await.unwrap();
    let m = tokio::time::timeout(Duration::from_secs(5), sub.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&m.payload[..], b"after");
    let mut got = Vec::new();
    for _ in 0..100 {
        match consumer.fetch(10, Duration::ZERO).await {
            Ok(batch) if !batch.is_empty() => {
                got = batch;
                break;
            }
            Ok(_) | Err(ClientError::Disconnected) => {
                tokio::time::sleep(Duration::from_millis(10)).await
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(got.iter().map(|r| r.offset).collect::<Vec<_>>(), [1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acked_publish_in_flight_fails_with_disconnected() {
    let (fake, client) = setup(Config::default(), fast_reconnect()).await;
    let held = client
        .send_acked(&PublishRecord::new("hold/t", "x"))
        .await
        .unwrap();
    fake.wait_for("the held record", |s| s.records == 1).await;
    fake.drop_connections();
    assert!(matches!(held.await, Err(ClientError::Disconnected)));
    // After the reconnect acked publishing works again.
    let mut result = Err(ClientError::Disconnected);
    for _ in 0..100 {
        result = client.publish_acked(&PublishRecord::new("ok/t", "y")).await;
        if result.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    result.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_published_while_disconnected_are_sent_after() {
    let (fake, client) = setup(Config::default(), fast_reconnect()).await;
    client.publish("b/t", b"0").await.unwrap();
    fake.wait_for("first", |s| s.records == 1).await;
    fake.drop_connections();
    for _ in 0..200 {
        if !client.is_connected() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for _ in 0..10 {
        client.publish("b/t", b"x").await.unwrap();
    }
    fake.wait_for("buffered records", |s| s.records == 11).await;
}

#[tokio::test]
async fn without_reconnect_a_lost_connection_ends_the_client() {
    let opts = ClientOptions {
        reconnect: None,
        ..ClientOptions::default()
    };
    let (fake, client) = setup(Config::default(), opts).await;
    let mut sub = client
        .subscribe("x/#", SubscribeOptions::default())
        .await
        .unwrap();
    fake.drop_connections();
    assert!(sub.recv().await.is_none(), "subscription ends");
    assert!(!client.is_connected());
    assert!(matches!(
        client.publish("x/1", b"x").await,
        Err(ClientError::Disconnected)
    ));
    assert!(matches!(
        client.flush().await,
        Err(ClientError::Disconnected)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acked_publish_queued_while_disconnected_is_sent_after() {
    let (fake, client) = setup(Config::default(), fast_reconnect()).await;
    client.ping().await.unwrap();
    fake.drop_connections();
    for _ in 0..500 {
        if !client.is_connected() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let ack = client
        .send_acked(&PublishRecord::new("late/t", "x"))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), ack)
        .await
        .expect("ack never came")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_reopen_surfaces_the_server_error() {
    let (fake, client) = setup(Config::default(), fast_reconnect()).await;
    let opts = ConsumerOptions {
        name: "once".into(),
        ..ConsumerOptions::default()
    };
    let mut consumer = client.consumer("s", opts).await.unwrap();
    fake.drop_connections();
    let stats = fake.wait_for("re-open", |s| s.opens.len() == 2).await;
    assert_eq!(stats.opens[1].1, fogline_client::StartPosition::Resume);
    let mut last = None;
    for _ in 0..100 {
        match consumer.fetch(1, Duration::ZERO).await {
            Err(ClientError::Disconnected) => tokio::time::sleep(Duration::from_millis(10)).await,
            other => {
                last = Some(other);
                break;
            }
        }
    }
    let err = last
        .expect("still disconnected")
        .expect_err("fetch should fail");
    assert_eq!(
        err.server_code(),
        Some(fogline_client::ErrorCode::Duplicate)
    );
    // The consumer is over: every later call says why, not `Disconnected`.
    let again = consumer.fetch(1, Duration::ZERO).await.expect_err("over");
    assert_eq!(
        again.server_code(),
        Some(fogline_client::ErrorCode::Duplicate)
    );
    let ack = consumer.ack(&[0]).expect_err("over");
    assert_eq!(
        ack.server_code(),
        Some(fogline_client::ErrorCode::Duplicate)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_is_noticed_by_keepalive() {
    let config = Config {
        read: false,
        ..Config::default()
    };
    let opts = ClientOptions {
        keepalive: Some(Duration::from_millis(100)),
        ..fast_reconnect()
    };
    let (fake, _client) = setup(config, opts).await;
    // The stalled server never answers the ping: the client drops the
    // connection and handshakes again.
    fake.wait_for("a reconnect", |s| s.hellos >= 2).await;
}

/// An acked record still buffered when the connection drops goes out on the next one, so
/// its ack stays pending: control frames queued after it (pings) and dropped with the
/// connection must not make it count as written, and failed with `Disconnected`.
// One thread: the pings are queued by the time the test task runs again.
#[tokio::test(flavor = "current_thread")]
async fn a_buffered_acked_record_outlives_dropped_control_frames() {
    // The server reads nothing, so a large record blocks the writer: what follows buffers.
    let (_dir, fake, client) = stalled_unix_fake().await;
    client.publish("big/t", vec![0u8; 2 << 20]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let ack = client
        .send_acked(&PublishRecord::new("hold/t", "x"))
        .await
        .unwrap();
    let pings: Vec<_> = (0..4)
        .map(|_| {
            let c = client.clone();
            tokio::spawn(async move { c.ping().await })
        })
        .collect();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    fake.drop_connections();
    for p in pings {
        assert!(
            p.await.unwrap().is_err(),
            "a ping of the lost connection fails"
        );
    }
    fake.wait_for("the reconnect", |s| s.hellos == 2).await;
    match tokio::time::timeout(Duration::from_millis(300), ack).await {
        Err(_) => {} // pending: sent again on the new connection, never acked by `hold/`
        Ok(r) => panic!("the buffered record's ack ended early: {r:?}"),
    }
}

/// Pipelined acked records: when the connection drops while one is being written, the ones
/// still buffered behind it fail too, so publishing the failed ones again, in order, keeps
/// their order (kept, they would go out on the next connection ahead of the retried one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acked_records_behind_a_cut_one_fail_with_it() {
    let (_dir, fake, client) = stalled_unix_fake().await;
    // Large, to a server that reads nothing: the writer is stuck in it.
    let first = client
        .send_acked(&PublishRecord::new("hold/t", vec![1u8; 2 << 20]))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = client
        .send_acked(&PublishRecord::new("hold/t", "2"))
        .await
        .unwrap();
    let other = client
        .send_acked(&PublishRecord::new("hold/u", "3"))
        .await
        .unwrap();
    fake.drop_connections();
    for (name, ack) in [("first", first), ("second", second), ("other", other)] {
        match tokio::time::timeout(Duration::from_secs(2), ack).await {
            Ok(Err(ClientError::Disconnected)) => {}
            r => panic!("{name}: expected Disconnected, got {r:?}"),
        }
    }
    // Nothing of them is left to send on the next connection.
    fake.wait_for("the reconnect", |s| s.hellos == 2).await;
    tokio::time::timeout(Duration::from_secs(1), client.flush())
        .await
        .expect("nothing buffered")
        .unwrap();
}
