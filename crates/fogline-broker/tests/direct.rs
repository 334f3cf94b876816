//! Direct handoff: a subscription's sink is offered a batch only when nothing is queued
//! before it and the publisher asked for it; a declined batch is queued as usual; an
//! acknowledged batch is stored before the sink sees it.

mod common;

use common::batch;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use fogline_broker::{
    Batch, Broker, BrokerConfig, DirectSink, Handoff, StorageMode, SubscribeOptions, Subscription,
};
use parking_lot::Mutex;
use tokio::sync::Notify;

/// Takes batches while `accept` is set; records each offer with the stream's end offset
/// at that moment.
struct Recorder {
    accept: AtomicBool,
    offers: Mutex<Vec<(Vec<u8>, u64)>>,
    broker: Mutex<Option<Broker>>,
}

impl DirectSink for Recorder {
    fn try_deliver(&self, b: &Batch) -> bool {
        let end = self
            .broker
            .lock()
            .as_ref()
            .and_then(|br| br.stream("default").map(|s| s.bounds().1))
            .unwrap_or(0);
        let payload = b.records.iter().next().unwrap().payload.to_vec();
        self.offers.lock().push((payload, end));
        self.accept.load(Ordering::Relaxed)
    }
}

fn setup() -> (Broker, Arc<Recorder>, Arc<Subscription>, Arc<Notify>) {
    let config = BrokerConfig {
        storage: StorageMode::Memory,
        ..BrokerConfig::default()
    };
    let (broker, _) = Broker::open(config).unwrap();
    let rec = Arc::new(Recorder {
        accept: AtomicBool::new(true),
        offers: Mutex::new(Vec::new()),
        broker: Mutex::new(Some(broker.clone())),
    });
    let waker = Arc::new(Notify::new());
    let sub = broker
        .subscribe_direct(
            "t",
            broker.next_origin(),
            SubscribeOptions::default(),
            waker.clone(),
            Some(rec.clone() as Arc<dyn DirectSink>),
        )
        .unwrap();
    (broker, rec, sub, waker)
}

fn drain(sub: &Subscription) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    sub.queue().drain(&mut got, usize::MAX);
    got.iter()
        .map(|b| b.records.iter().next().unwrap().payload.to_vec())
        .collect()
}

/// True when `waker` has a stored permit (something was queued and announced).
async fn notified(waker: &Notify) -> bool {
    tokio::time::timeout(std::time::Duration::from_millis(20), waker.notified())
        .await
        .is_ok()
}

#[tokio::test]
async fn an_accepted_batch_is_not_queued() {
    let (broker, rec, sub, waker) = setup();
    broker
        .publish_unacked(batch(&broker, b"a"), Handoff::Direct)
        .await
        .unwrap();
    assert_eq!(rec.offers.lock().len(), 1);
    assert!(sub.queue().is_empty());
    assert!(!notified(&waker).await, "nothing queued, nobody woken");
    assert_eq!(broker.stats().direct_deliveries.load(Ordering::Relaxed), 1);
}

#[tokio::test]
async fn a_declined_batch_is_queued_and_the_writer_woken() {
    let (broker, rec, sub, waker) = setup();
    rec.accept.store(false, Ordering::Relaxed);
    broker
        .publish_unacked(batch(&broker, b"a"), Handoff::Direct)
        .await
        .unwrap();
    assert_eq!(rec.offers.lock().len(), 1);
    assert!(notified(&waker).await);
    assert_eq!(drain(&sub), vec![b"a".to_vec()]);
    assert_eq!(broker.stats().direct_deliveries.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn nothing_overtakes_a_queued_batch() {
    let (broker, rec, sub, _waker) = setup();
    rec.accept.store(false, Ordering::Relaxed);
    broker
        .publish_unacked(batch(&broker, b"1"), Handoff::Direct)
        .await
        .unwrap();
    rec.accept.store(true, Ordering::Relaxed);
    broker
        .publish_unacked(batch(&broker, b"2"), Handoff::Direct)
        .await
        .unwrap();
    broker
        .publish(batch(&broker, b"3"), Handoff::Direct)
        .await
        .unwrap();
    assert_eq!(
        rec.offers.lock().len(),
        1,
        "offered only while the queue was empty"
    );
    assert_eq!(
        drain(&sub),
        vec![b"1".to_vec(), b"2".to_vec(), b"3".to_vec()]
    );
    broker
        .publish_unacked(batch(&broker, b"4"), Handoff::Direct)
        .await
        .unwrap();
    assert_eq!(rec.offers.lock().len(), 2, "offered again once drained");
    assert!(sub.queue().is_empty());
}

#[tokio::test]
async fn handoff_queue_never_offers() {
    let (broker, rec, sub, _waker) = setup();
    broker
        .publish_unacked(batch(&broker, b"a"), Handoff::Queue)
        .await
        .unwrap();
    broker
        .publish(batch(&broker, b"b"), Handoff::Queue)
        .await
        .unwrap();
    assert!(rec.offers.lock().is_empty());
    assert_eq!(drain(&sub), vec![b"a".to_vec(), b"b".to_vec()]);
}

#[tokio::test]
async fn an_acked_batch_is_stored_before_the_sink_sees_it() {
    let (broker, rec, _sub, _waker) = setup();
    broker
        .publish(batch(&broker, b"a"), Handoff::Direct)
        .await
        .unwrap();
    broker
        .publish_unacked(batch(&broker, b"b"), Handoff::Direct)
        .await
        .unwrap();
    let offers = rec.offers.lock().clone();
    assert_eq!(offers[0], (b"a".to_vec(), 1), "acked: appended first");
    assert_eq!(
        offers[1],
        (b"b".to_vec(), 1),
        "unacked: offered before the append"
    );
    rec.broker.lock().take();
}

#[tokio::test]
async fn a_closed_subscription_is_not_offered() {
    let (broker, rec, sub, _waker) = setup();
    broker.unsubscribe(&sub);
    broker
        .publish_unacked(batch(&broker, b"a"), Handoff::Direct)
        .await
        .unwrap();
    assert!(rec.offers.lock().is_empty());
}
