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
    // The flusher starts with the first publish and runs once the others have appended:
    // one flush, or a few, covers all 50.
    let flushes = stream.flushes();
    assert!(
        (1..=10).contains(&flushes),
        "{flushes} flushes for 50 batches"
    );
    assert_eq!(stream.read(0, 100, usize::MAX).unwrap().len(), 50);
    drop((stream, broker));
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

/// Two publishers that keep publishing acknowledged batches until both have had 20
/// acknowledged both get there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acked_publishers_under_steady_load_all_make_progress() {
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
    let dir = tempfile::tempdir().unwrap();
    let broker = fsync_broker(dir.path());
    let done = std::sync::Arc::new(AtomicU32::new(0));
    let publishers: Vec<_> = (0..2u32)
        .map(|p| {
            let (b, done) = (broker.clone(), done.clone());
            tokio::spawn(async move {
                let mut n = 0u32;
                while done.load(SeqCst) < 2 {
                    let one = batch(&b, &(p << 24 | n).to_le_bytes());
                    b.publish(one, Handoff::Queue).await.unwrap();
                    n += 1;
                    if n == 20 {
                        done.fetch_add(1, SeqCst);
                    }
                }
                n
            })
        })
        .collect();
    let all = async {
        let mut total = 0;
        for p in publishers {
            total += p.await.unwrap();
        }
        total
    };
    let total = tokio::time::timeout(Duration::from_secs(20), all)
        .await
        .expect("both publishers got 20 acknowledgements");
    let stream = broker.stream("default").unwrap();
    assert_eq!(
        stream.read(0, usize::MAX, usize::MAX).unwrap().len(),
        total as usize
    );
}

/// An acknowledged publish returns while fire-and-forget batches keep arriving, and those
/// all become visible.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acked_publish_returns_among_steady_unacked_ones() {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    let dir = tempfile::tempdir().unwrap();
    let broker = fsync_broker(dir.path());
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let load = {
        let (b, stop) = (broker.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0u32;
            while !stop.load(Relaxed) {
                b.publish_unacked(batch(&b, &n.to_le_bytes()), Handoff::Queue)
                    .await
                    .unwrap();
                n += 1;
                tokio::task::yield_now().await;
            }
            n
        })
    };
    for i in 0..20u32 {
        let one = batch(&broker, &i.to_le_bytes());
        tokio::time::timeout(Duration::from_secs(10), broker.publish(one, Handoff::Queue))
            .await
            .expect("the acked publish returned")
            .unwrap();
    }
    stop.store(true, Relaxed);
    let unacked = load.await.unwrap() as usize;
    let stream = broker.stream("default").unwrap().clone();
    let all = async {
        while stream.read(0, usize::MAX, usize::MAX).unwrap().len() < 20 + unacked {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), all)
        .await
        .expect("every record became visible");
}

/// A failed flush fails the publishes waiting for it, and the stream then refuses records
/// (a retried `msync` may succeed over pages the kernel already dropped) until it is opened
/// again, which recovers it from disk.
#[tokio::test(flavor = "current_thread")]
async fn a_failed_flush_fails_its_publishers_and_stops_the_stream() {
    let dir = tempfile::tempdir().unwrap();
    let broker = fsync_broker(dir.path());
    broker
        .publish(batch(&broker, b"before"), Handoff::Queue)
        .await
        .unwrap();
    let stream = broker.stream("default").unwrap().clone();
    stream.fail_next_flush();
    let err = broker
        .publish(batch(&broker, b"failed"), Handoff::Queue)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("injected failure"), "{err}");
    for publish in [
        broker
            .publish(batch(&broker, b"after"), Handoff::Queue)
            .await,
        broker
            .publish_unacked(batch(&broker, b"after"), Handoff::Queue)
            .await,
    ] {
        let err = publish.unwrap_err().to_string();
        assert!(err.contains("takes no more records"), "{err}");
    }
    assert_eq!(stream.read(0, 10, usize::MAX).unwrap().len(), 1);
    drop((stream, broker));
    let broker = fsync_broker(dir.path());
    broker
        .publish(batch(&broker, b"reopened"), Handoff::Queue)
        .await
        .unwrap();
    let stream = broker.stream("default").unwrap();
    let got: Vec<Vec<u8>> = stream
        .read(0, 10, usize::MAX)
        .unwrap()
        .iter()
        .map(|r| r.payload.to_vec())
        .collect();
    assert_eq!(got.first().map(Vec::as_slice), Some(&b"before"[..]));
    assert_eq!(got.last().map(Vec::as_slice), Some(&b"reopened"[..]));
}

/// A flush fails while its flusher is held up, and a roll then seals the segment. Linux
/// reports a failed writeback once, so the seal's own msync would succeed: it must fail
/// instead, and the batch whose flush failed must not be acknowledged.
#[tokio::test(flavor = "current_thread")]
async fn a_roll_after_a_failed_flush_acknowledges_nothing_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig {
        storage: StorageMode::Fsync,
        data_dir: dir.path().to_path_buf(),
        segment_bytes: bytesize::ByteSize::kib(4),
        ..BrokerConfig::default()
    };
    let broker = Broker::open(config).unwrap().0;
    let stream = broker.stream("default").unwrap().clone();
    stream.hold_flushes(true);
    stream.fail_next_flush();
    let mut acks = fogline_broker::AckQueue::default();
    let first = broker.store_acked(batch(&broker, b"a"));
    assert!(acks.push(1u32, first).is_none(), "waits for its flush");
    // The flusher takes its job (whose writeback fails) and waits at the hold.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    // Larger than what is left of the segment: a roll seals it.
    let big = broker.store_acked(batch(&broker, &[0u8; 5000]));
    assert!(big.is_err(), "the seal's flush fails too");
    match acks.pop_ready() {
        Some((_, Err(e))) => assert!(e.to_string().contains("injected failure"), "{e}"),
        Some((_, Ok(_))) => panic!("acknowledged although its flush failed"),
        None => panic!("expected the failure, got nothing ready"),
    }
    stream.hold_flushes(false);
}
