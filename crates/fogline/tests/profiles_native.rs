//! Associative Rendezvous end to end over the native protocol, against the real server:
//! a producer announced with notify_interest sends nothing until a matching interest
//! subscribes, sends while it stays, and stops when it leaves; the interest gets only the
//! records whose profile matches.

mod support;

use std::time::Duration;

use fogline_client::{Client, ClientOptions, PublishRecord, SubscribeOptions};
use fogline_profile::DataProfile;

fn record(topic: &str, profile: &str, payload: &str) -> PublishRecord {
    PublishRecord {
        topic: topic.into(),
        headers: DataProfile::parse(profile).unwrap().to_headers().unwrap(),
        payload: payload.to_string().into(),
        ..PublishRecord::default()
    }
}

/// The producer: publishes one reading each time it may, and reports what it sent.
async fn produce(client: &Client, ann: &mut fogline_client::Announcement, n: usize) -> usize {
    let mut sent = 0;
    for i in 0..n {
        if !ann.interested() {
            break;
        }
        client
            .publish_acked(&record(
                "site/nj/lidar",
                "type=drone sensor=lidar alt=120",
                &format!("r{i}"),
            ))
            .await
            .unwrap();
        sent += 1;
    }
    sent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producer_sends_only_while_a_matching_interest_is_subscribed() {
    let dir = tempfile::tempdir().unwrap();
    let server = support::serve(["--data-dir", dir.path().to_str().unwrap()]);
    let producer = Client::connect(&server.native, ClientOptions::default())
        .await
        .unwrap();
    let consumer = Client::connect(&server.native, ClientOptions::default())
        .await
        .unwrap();
    let mut ann = producer
        .announce("site/nj/lidar", "type=drone sensor=lidar alt=120")
        .await
        .unwrap();
    assert!(!ann.interested(), "nobody subscribed yet");
    assert_eq!(produce(&producer, &mut ann, 5).await, 0);

    // An interest that does not match the profile wakes nobody.
    let opts = |i: &str| SubscribeOptions {
        interest: Some(i.to_string()),
        ..SubscribeOptions::default()
    };
    let radar = consumer
        .subscribe("site/#", opts("sensor=radar"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!ann.interested());

    let mut lidar = consumer
        .subscribe("site/#", opts("sensor=li* alt=100..500"))
        .await
        .unwrap();
    assert!(
        tokio::time::timeout(Duration::from_secs(10), ann.changed())
            .await
            .unwrap()
            .unwrap(),
        "start"
    );
    assert_eq!(produce(&producer, &mut ann, 5).await, 5);
    // Another producer's records that do not match never reach the interest.
    producer
        .publish_acked(&record("site/nj/lidar", "sensor=lidar alt=900", "high"))
        .await
        .unwrap();
    producer
        .publish_acked(&record("site/nj/lidar", "sensor=lidar alt=130", "last"))
        .await
        .unwrap();
    let mut got = Vec::new();
    while got.last().map(String::as_str) != Some("last") {
        let m = tokio::time::timeout(Duration::from_secs(10), lidar.recv())
            .await
            .expect("a record")
            .expect("open");
        got.push(String::from_utf8(m.payload.to_vec()).unwrap());
    }
    assert_eq!(got, ["r0", "r1", "r2", "r3", "r4", "last"]);

    drop(lidar);
    assert!(
        !tokio::time::timeout(Duration::from_secs(10), ann.changed())
            .await
            .unwrap()
            .unwrap(),
        "stop"
    );
    assert_eq!(produce(&producer, &mut ann, 5).await, 0);

    // A plain subscription to the topic counts as interest too; the consumer's
    // connection ending takes its subscriptions and so the interest away.
    let plain = consumer
        .subscribe("site/+/lidar", SubscribeOptions::default())
        .await
        .unwrap();
    assert!(ann.changed().await.unwrap());
    drop(plain);
    drop(radar);
    consumer.close().await.unwrap();
    assert!(!ann.changed().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_interests_and_profiles_are_refused_with_reasons() {
    let dir = tempfile::tempdir().unwrap();
    let server = support::serve(["--data-dir", dir.path().to_str().unwrap()]);
    let client = Client::connect(&server.native, ClientOptions::default())
        .await
        .unwrap();
    let opts = |i: &str| SubscribeOptions {
        interest: Some(i.to_string()),
        ..SubscribeOptions::default()
    };
    for bad in ["alt=1..x..2", "@a/b k", "x=\"open"] {
        let err = client.subscribe("#", opts(bad)).await.err().unwrap();
        assert!(
            matches!(err, fogline_client::ClientError::InvalidInterest(_)),
            "{bad}: {err}"
        );
    }
    let err = client.announce("a/+", "k").await.err().unwrap();
    assert!(matches!(err, fogline_client::ClientError::InvalidTopic(_)));
    let err = client.announce("a", "x=\"open").await.err().unwrap();
    assert!(matches!(
        err,
        fogline_client::ClientError::InvalidProfile(_)
    ));
    // The client is still fine.
    client.ping().await.unwrap();
}
