//! No-local can change on a live subscription without touching what is queued
//! (MQTT 5 re-subscribe with other options, MQTT-3.8.4-3 / 3.8.4-4).

use std::sync::Arc;

use fogline_broker::{Batch, Broker, BrokerConfig, Handoff, StorageMode, SubscribeOptions};
use fogline_wire::RecordBlock;
use tokio::sync::Notify;

fn batch(payload: &[u8], origin: u64) -> Batch {
    Batch {
        topic: "t".into(),
        records: RecordBlock::single(0, b"", payload).unwrap(),
        timestamp: 1,
        priority: false,
        origin,
    }
}

#[tokio::test]
async fn no_local_switches_in_place_and_keeps_the_queue() {
    let config = BrokerConfig {
        storage: StorageMode::Memory,
        ..BrokerConfig::default()
    };
    let (broker, _) = Broker::open(config).unwrap();
    let me = broker.next_origin();
    let other = broker.next_origin();
    let sub = broker
        .subscribe(
            "t",
            me,
            SubscribeOptions::default(),
            Arc::new(Notify::new()),
        )
        .unwrap();
    broker
        .publish(batch(b"own-1", me), Handoff::Direct)
        .await
        .unwrap();
    sub.set_no_local(true);
    assert!(sub.no_local());
    broker
        .publish(batch(b"own-2", me), Handoff::Direct)
        .await
        .unwrap();
    broker
        .publish(batch(b"other", other), Handoff::Direct)
        .await
        .unwrap();
    sub.set_no_local(false);
    broker
        .publish(batch(b"own-3", me), Handoff::Direct)
        .await
        .unwrap();
    let mut got = Vec::new();
    sub.queue().drain(&mut got, usize::MAX);
    let payloads: Vec<Vec<u8>> = got
        .iter()
        .flat_map(|b| b.records.iter().map(|r| r.payload.to_vec()))
        .collect();
    assert_eq!(payloads, [&b"own-1"[..], b"other", b"own-3"]);
}
