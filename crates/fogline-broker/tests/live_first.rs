//! The two publish orders. Acknowledged publishes store first, so a failure delivers
//! nothing and a retry duplicates nothing. Unacknowledged ones (fire-and-forget, MQTT
//! QoS 0) reach live subscribers before the append, and yield before a large append.

mod common;

use common::batch;

use std::sync::Arc;

use bytesize::ByteSize;
use fogline_broker::{Broker, BrokerConfig, Handoff, StorageMode, SubscribeOptions, Subscription};
use tokio::sync::Notify;

fn subscribe(broker: &Broker) -> Arc<Subscription> {
    broker
        .subscribe(
            "t",
            broker.next_origin(),
            SubscribeOptions::default(),
            Arc::new(Notify::new()),
        )
        .unwrap()
}

fn queued(sub: &Subscription) -> usize {
    let mut got = Vec::new();
    sub.queue().drain(&mut got, usize::MAX);
    got.len()
}

#[tokio::test(flavor = "current_thread")]
async fn a_large_unacked_batch_is_queued_live_before_the_append() {
    let config = BrokerConfig {
        storage: StorageMode::Memory,
        ..BrokerConfig::default()
    };
    let (broker, _) = Broker::open(config).unwrap();
    let sub = subscribe(&broker);
    let stream = broker
        .stream("default")
        .expect("the default stream")
        .clone();
    let payload = vec![7u8; 256 * 1024];
    let b = broker.clone();
    let one = batch(&broker, &payload);
    let publish = tokio::spawn(async move { b.publish_unacked(one, Handoff::Direct).await });
    // Let the publish run up to the point where it lets the subscribers' writers go first.
    tokio::task::yield_now().await;
    assert!(!sub.queue().is_empty(), "not queued for the subscriber yet");
    assert_eq!(stream.bounds().1, 0, "appended before the live delivery");
    publish.await.unwrap().unwrap();
    assert_eq!(stream.bounds().1, 1, "publish returned before the append");
    let mut got = Vec::new();
    sub.queue().drain(&mut got, usize::MAX);
    assert_eq!(got.len(), 1);
    assert_eq!(
        &got[0].records.iter().next().unwrap().payload[..],
        &payload[..]
    );
}

/// A stream whose next segment cannot be created (its folder is gone): the append of
/// anything past the first segment fails.
#[tokio::test]
async fn a_failed_append_delivers_only_unacked_batches() {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig {
        storage: StorageMode::Mmap,
        data_dir: dir.path().to_path_buf(),
        segment_bytes: ByteSize::kib(64),
        ..BrokerConfig::default()
    };
    let (broker, _) = Broker::open(config).unwrap();
    let sub = subscribe(&broker);
    let payload = vec![1u8; 40 * 1024];
    broker
        .publish(batch(&broker, &payload), Handoff::Direct)
        .await
        .unwrap();
    assert_eq!(queued(&sub), 1);
    std::fs::remove_dir_all(dir.path().join("default")).unwrap();

    let acked = broker
        .publish(batch(&broker, &payload), Handoff::Direct)
        .await;
    assert!(acked.is_err(), "the segment roll should fail");
    assert_eq!(
        queued(&sub),
        0,
        "an acked publish that failed was delivered"
    );

    let unacked = broker
        .publish_unacked(batch(&broker, &payload), Handoff::Direct)
        .await;
    assert!(unacked.is_err(), "the storage failure should be reported");
    assert_eq!(
        queued(&sub),
        1,
        "a fire-and-forget publish was not delivered live"
    );
}
