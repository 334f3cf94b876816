//! Live subscribers get a batch before it is appended to the log (subscriptions are at
//! most once and read nothing from it), while the publisher returns, and may acknowledge,
//! only once the batch is stored.

use std::sync::Arc;

use fogline_broker::{Batch, Broker, BrokerConfig, StorageMode, SubscribeOptions};
use fogline_wire::RecordBlock;
use tokio::sync::Notify;

#[tokio::test(flavor = "current_thread")]
async fn a_large_batch_is_queued_live_before_the_append() {
    let config = BrokerConfig {
        storage: StorageMode::Memory,
        ..BrokerConfig::default()
    };
    let (broker, _) = Broker::open(config).unwrap();
    let sub = broker
        .subscribe(
            "t",
            broker.next_origin(),
            SubscribeOptions::default(),
            Arc::new(Notify::new()),
        )
        .unwrap();
    let stream = broker
        .stream("default")
        .expect("the default stream")
        .clone();
    let payload = vec![7u8; 256 * 1024];
    let batch = Batch {
        topic: "t".into(),
        records: RecordBlock::single(0, b"", &payload).unwrap(),
        timestamp: 1,
        priority: false,
        origin: broker.next_origin(),
    };
    let b = broker.clone();
    let publish = tokio::spawn(async move { b.publish(batch).await });
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
