//! Durable consumers' positions are written by a thread of the stream, not by the task that
//! acks (on a one-thread runtime, every connection's): storing one returns before it is on
//! disk, a reopen resumes from it all the same, and `sync_positions` (the server calls it
//! when it stops) or dropping the broker puts it on disk.

mod common;

use common::{batch, broker, durable};

use std::time::Duration;

use tokio::time::Instant;

use fogline_broker::{Handoff, StorageMode};

fn on_disk(dir: &std::path::Path, name: &str) -> Option<u64> {
    let path = dir.join("default/consumers").join(name);
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().parse().unwrap())
}

#[tokio::test(flavor = "current_thread")]
async fn positions_are_written_off_the_acking_thread_and_survive_a_restart() {
    for storage in [StorageMode::Mmap, StorageMode::Fsync] {
        let dir = tempfile::tempdir().unwrap();
        let b = broker(dir.path(), storage);
        for i in 0..10u8 {
            b.publish(batch(&b, &[i]), Handoff::Queue).await.unwrap();
        }
        let stream = b.stream("default").unwrap().clone();
        stream.hold_positions(true);
        let mut c = b.open_consumer("default", durable("c")).unwrap();
        let got = c.poll(4, Instant::now()).unwrap();
        let offsets: Vec<u64> = got.iter().map(|d| d.record.offset).collect();
        assert_eq!(offsets, [0, 1, 2, 3]);
        c.ack(&offsets);
        c.save().unwrap();
        drop(c);
        assert_eq!(
            on_disk(dir.path(), "c"),
            None,
            "{storage:?}: not written yet"
        );
        // A reopen resumes from the position in memory.
        let mut c = b.open_consumer("default", durable("c")).unwrap();
        let got = c.poll(1, Instant::now()).unwrap();
        assert_eq!(got[0].record.offset, 4, "{storage:?}");
        drop(c);

        stream.hold_positions(false);
        b.sync_positions();
        assert_eq!(on_disk(dir.path(), "c"), Some(4), "{storage:?}");
        drop((stream, b));
        let b = broker(dir.path(), storage);
        let mut c = b.open_consumer("default", durable("c")).unwrap();
        let got = c.poll(1, Instant::now()).unwrap();
        assert_eq!(got[0].record.offset, 4, "{storage:?}: after a restart");
    }
}

/// Positions still queued when the broker is dropped are written before it is gone.
#[tokio::test(flavor = "current_thread")]
async fn dropping_the_broker_writes_what_is_queued() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Mmap);
    for i in 0..3u8 {
        b.publish(batch(&b, &[i]), Handoff::Queue).await.unwrap();
    }
    let mut c = b.open_consumer("default", durable("d")).unwrap();
    let got = c.poll(10, Instant::now()).unwrap();
    c.ack(&got.iter().map(|d| d.record.offset).collect::<Vec<_>>());
    drop(c);
    drop(b);
    assert_eq!(on_disk(dir.path(), "d"), Some(3));
}

/// A position whose write failed is written again once it can be, without a newer ack.
#[tokio::test(flavor = "current_thread")]
async fn a_failed_write_is_tried_again() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Mmap);
    for i in 0..3u8 {
        b.publish(batch(&b, &[i]), Handoff::Queue).await.unwrap();
    }
    // A file where the positions' directory belongs: every write fails.
    let blocker = dir.path().join("default/consumers");
    std::fs::write(&blocker, b"").unwrap();
    let mut c = b.open_consumer("default", durable("r")).unwrap();
    let got = c.poll(10, Instant::now()).unwrap();
    c.ack(&got.iter().map(|d| d.record.offset).collect::<Vec<_>>());
    drop(c); // its position is queued, and its write fails
    b.sync_positions();
    std::fs::remove_file(&blocker).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while on_disk(dir.path(), "r").is_none() {
        assert!(Instant::now() < deadline, "never written again");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(on_disk(dir.path(), "r"), Some(3));
}
