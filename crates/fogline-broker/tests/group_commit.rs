//! `fsync` storage: acknowledged batches are durable and visible once `publish` returns, the
//! batches of concurrent publishers share flushes (group commit), and unacknowledged ones
//! become visible without anyone waiting for them.

mod common;

use common::batch;

use std::time::Duration;

use fogline_broker::{Broker, BrokerConfig, Handoff, StorageMode};

fn fsync_broker(dir: &std::path::Path) -> Broker {
    let config = BrokerConfig {
        storage: StorageMode::Fsync,
        data_dir: dir.to_path_buf(),
        ..BrokerConfig::default()
    };
    Broker::open(config).unwrap().0
}

#[tokio::test(flavor = "current_thread")]
async fn concurrent_acked_publishes_share_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let broker = fsync_broker(dir.path());
    let tasks: Vec<_> = (0..50u32)
        .map(|i| {
            let b = broker.clone();
            tokio::spawn(async move {
                let one = batch(&b, &i.to_le_bytes());
                b.publish(one, Handoff::Queue).await
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    let stream = broker.stream("default").unwrap();
    // The first publisher's flush covers its own batch; the 49 appended meanwhile share
    // what follows.
    let flushes = stream.flushes();
    assert!(
        (1..=10).contains(&flushes),
        "{flushes} flushes for 50 batches"
    );
    assert_eq!(stream.read(0, 100, usize::MAX).unwrap().len(), 50);
    drop(broker);
    let broker = fsync_broker(dir.path());
    let stream = broker.stream("default").unwrap();
    assert_eq!(
        stream.read(0, 100, usize::MAX).unwrap().len(),
        50,
        "after reopening"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acked_publish_is_visible_when_it_returns() {
    let dir = tempfile::tempdir().unwrap();
    let broker = fsync_broker(dir.path());
    let tasks: Vec<_> = (0..8u32)
        .map(|p| {
            let b = broker.clone();
            tokio::spawn(async move {
                for i in 0..50u32 {
                    let one = batch(&b, &(p * 1000 + i).to_le_bytes());
                    b.publish(one, Handoff::Queue).await.unwrap();
                    let stream = b.stream("default").unwrap();
                    let (_, next) = stream.bounds();
                    // This batch's record is below the committed end: readable now.
                    let seen = stream.read(0, usize::MAX, usize::MAX).unwrap();
                    let want = (p * 1000 + i).to_le_bytes();
                    assert!(
                        seen.iter().any(|r| r.payload[..] == want[..]),
                        "publisher {p} batch {i} not visible (next offset {next})"
                    );
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let stream = broker.stream("default").unwrap();
    assert_eq!(stream.read(0, usize::MAX, usize::MAX).unwrap().len(), 400);
    assert!(stream.flushes() <= 400);
}

#[tokio::test(flavor = "current_thread")]
async fn unacked_publishes_are_flushed_without_a_waiter() {
    let dir = tempfile::tempdir().unwrap();
    let broker = fsync_broker(dir.path());
    for i in 0..20u32 {
        broker
            .publish_unacked(batch(&broker, &i.to_le_bytes()), Handoff::Queue)
            .await
            .unwrap();
    }
    let stream = broker.stream("default").unwrap().clone();
    let visible = async {
        while stream.read(0, 100, usize::MAX).unwrap().len() < 20 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), visible)
        .await
        .expect("all 20 records became visible");
    assert!(stream.flushes() >= 1);
}
