use fogline_client::{ClientError, ClientOptions, ErrorCode, PublishRecord, SubscribeOptions};

use crate::fake::Config;
use crate::setup;

#[tokio::test]
async fn subscription_receives_matching_records() {
    let (fake, client) = setup(Config::default(), ClientOptions::default()).await;
    let mut sub = client
        .subscribe("site/+/lidar", SubscribeOptions::default())
        .await
        .unwrap();
    client.publish("site/r7/lidar", b"scan").await.unwrap();
    client.publish("site/r7/camera", b"img").await.unwrap();
    client
        .publish_with(&PublishRecord {
            timestamp: Some(42),
            priority: true,
            ..PublishRecord::new("site/r8/lidar", "scan2")
        })
        .await
        .unwrap();
    // The high-priority record may overtake the bulk one.
    let mut got = [sub.recv().await.unwrap(), sub.recv().await.unwrap()];
    got.sort_by(|a, b| a.topic.cmp(&b.topic));
    let m = &got[0];
    assert_eq!(m.topic, "site/r7/lidar");
    assert_eq!(&m.payload[..], b"scan");
    assert_eq!(m.timestamp, 777, "timestamp 0 takes the batch timestamp");
    assert!(!m.priority);
    let m = &got[1];
    assert_eq!(m.topic, "site/r8/lidar");
    assert_eq!(m.timestamp, 42);
    assert!(m.priority);
    assert_eq!(sub.dropped(), 0);
    let sub_id = sub.sub_id();
    drop(sub);
    fake.wait_for("unsubscribe", |s| s.unsubscribes == [sub_id])
        .await;
}

#[tokio::test]
async fn server_reported_drops_are_counted() {
    let (_fake, client) = setup(Config::default(), ClientOptions::default()).await;
    let mut sub = client
        .subscribe("lossy/#", SubscribeOptions::default())
        .await
        .unwrap();
    client.publish("lossy/x", b"1").await.unwrap();
    sub.recv().await.unwrap();
    assert_eq!(sub.dropped(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_subscription_holds_the_socket_instead_of_dropping() {
    let (_fake, client) = setup(Config::default(), ClientOptions::default()).await;
    let opts = SubscribeOptions {
        capacity: 10,
        ..SubscribeOptions::default()
    };
    let mut sub = client.subscribe("full/#", opts).await.unwrap();
    for i in 0..100u32 {
        client.publish("full/x", i.to_le_bytes()).await.unwrap();
    }
    client.flush().await.unwrap();
    // Nothing is read for a while: the client stops reading, drops nothing.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    for i in 0..100u32 {
        let m = sub.recv().await.unwrap();
        assert_eq!(&m.payload[..], &i.to_le_bytes()[..]);
    }
    assert_eq!(sub.dropped(), 0);
    // Once caught up, the connection goes on.
    client.ping().await.unwrap();
}

#[tokio::test]
async fn refused_and_invalid_filters_are_errors() {
    let (_fake, client) = setup(Config::default(), ClientOptions::default()).await;
    let err = client
        .subscribe("deny/#", SubscribeOptions::default())
        .await
        .err()
        .unwrap();
    assert_eq!(err.server_code(), Some(ErrorCode::InvalidFilter));
    let err = client
        .subscribe("a/#/b", SubscribeOptions::default())
        .await
        .err()
        .unwrap();
    assert!(matches!(err, ClientError::InvalidFilter(_)));
}

#[tokio::test]
async fn a_batch_larger_than_the_capacity_still_gets_through_when_empty() {
    let (_fake, client) = setup(Config::default(), ClientOptions::default()).await;
    let opts = SubscribeOptions {
        capacity: 10,
        ..SubscribeOptions::default()
    };
    let mut sub = client.subscribe("big/#", opts).await.unwrap();
    // On this single-threaded runtime the writer runs only at the flush,
    // so the 50 records leave as one frame and come back as one Deliver.
    for i in 0..50u32 {
        client.publish("big/x", i.to_le_bytes()).await.unwrap();
    }
    client.flush().await.unwrap();
    for i in 0..50u32 {
        assert_eq!(&sub.recv().await.unwrap().payload[..], &i.to_le_bytes());
    }
    assert_eq!(sub.dropped(), 0);
}
