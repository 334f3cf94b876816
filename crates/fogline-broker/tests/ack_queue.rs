//! `AckQueue`: a connection's stored acked batches, answered in order once durable.

mod common;

use common::{batch, broker};

use fogline_broker::{AckQueue, StorageMode};

#[tokio::test(flavor = "current_thread")]
async fn without_fsync_a_batch_is_answered_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Mmap);
    let mut q = AckQueue::default();
    let back = q.push(7u64, b.store_acked(batch(&b, b"x")));
    assert!(matches!(back, Some((7, Ok(_)))));
    assert!(q.is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn batches_wait_for_their_flush_and_come_out_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Fsync);
    let stream = b.stream("default").unwrap().clone();
    stream.hold_flushes(true);
    let mut q = AckQueue::default();
    for i in 1..=5u64 {
        assert!(q.push(i, b.store_acked(batch(&b, b"x"))).is_none(), "waits");
    }
    assert_eq!(q.count(|&i| i % 2 == 1), 3);
    assert!(q.pop_ready().is_none(), "nothing is durable yet");
    stream.hold_flushes(false);
    q.oldest_ready().await;
    let mut out = Vec::new();
    while !q.is_empty() {
        q.oldest_ready().await;
        while let Some((i, r)) = q.pop_ready() {
            assert!(r.is_ok());
            out.push(i);
        }
    }
    assert_eq!(out, vec![1, 2, 3, 4, 5]);
}

#[tokio::test(flavor = "current_thread")]
async fn it_is_full_at_32_mib_or_256_batches() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Fsync);
    b.stream("default").unwrap().hold_flushes(true);
    let mut q = AckQueue::default();
    let mib = vec![0u8; 1 << 20];
    for i in 0..31u32 {
        q.push(i, b.store_acked(batch(&b, &mib)));
        assert!(!q.is_full(), "{} MiB", i + 1);
    }
    q.push(31, b.store_acked(batch(&b, &mib)));
    assert!(q.is_full(), "32 MiB");

    let mut q = AckQueue::default();
    for i in 0..255u32 {
        q.push(i, b.store_acked(batch(&b, b"x")));
        assert!(!q.is_full());
    }
    q.push(255, b.store_acked(batch(&b, b"x")));
    assert!(q.is_full(), "256 batches");
}

/// A batch that could not be stored is answered in its turn, not ahead of earlier ones.
#[tokio::test(flavor = "current_thread")]
async fn a_refusal_waits_its_turn() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Fsync);
    let stream = b.stream("default").unwrap().clone();
    stream.hold_flushes(true);
    let mut q = AckQueue::default();
    q.push(1u64, b.store_acked(batch(&b, b"x")));
    let too_big = vec![0u8; b.max_message() + 1];
    assert!(q.push(2, b.store_acked(batch(&b, &too_big))).is_none());
    assert!(q.pop_ready().is_none(), "the refusal waits behind batch 1");
    stream.hold_flushes(false);
    q.oldest_ready().await;
    assert!(matches!(q.pop_ready(), Some((1, Ok(_)))));
    assert!(matches!(q.pop_ready(), Some((2, Err(_)))));
}
