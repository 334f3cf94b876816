//! Bounded queues: the three slow-consumer policies and the priority lane.

mod common;

use std::time::Duration;

use common::{delivered, Raw, TestServer};
use fogline_broker::SlowConsumerPolicy;
use fogline_wire::{ErrorCode, Frame, FLAG_HIGH_PRIORITY};

const RECORD: usize = 1024;

fn record(seq: u32) -> Vec<u8> {
    let mut v = vec![0u8; RECORD];
    v[..4].copy_from_slice(&seq.to_le_bytes());
    v
}

fn seq(p: &[u8]) -> u32 {
    u32::from_le_bytes([p[0], p[1], p[2], p[3]])
}

/// Publishes `n` 1 KiB records in frames of 64, acked, numbered from `from`.
async fn flood(c: &mut Raw, topic: &str, from: u32, n: u32) {
    let recs: Vec<Vec<u8>> = (from..from + n).map(record).collect();
    for (i, chunk) in recs.chunks(64).enumerate() {
        let refs: Vec<&[u8]> = chunk.iter().map(|v| v.as_slice()).collect();
        c.publish_acked(topic, &refs, i as u64 + 1).await;
    }
}

/// Reads deliveries for `sub_id` until `quiet` passes with nothing; returns
/// (sequence numbers, total reported as dropped).
async fn drain(c: &mut Raw, sub_id: u32, quiet: Duration) -> (Vec<u32>, u64) {
    let mut seqs = Vec::new();
    let mut dropped = 0u64;
    while let Some(f) = c.recv_within(quiet).await {
        if let Frame::Deliver {
            sub_id: s,
            dropped: d,
            ..
        } = &f
        {
            if *s == sub_id {
                dropped += u64::from(*d);
            }
        }
        seqs.extend(
            delivered(std::slice::from_ref(&f), sub_id)
                .iter()
                .map(|p| seq(p)),
        );
    }
    (seqs, dropped)
}

fn small_queues(policy: SlowConsumerPolicy) -> impl FnOnce(&mut common::Config) {
    move |c| {
        c.broker.subscriptions.max_records = 512;
        c.broker.subscriptions.max_bytes = bytesize::ByteSize::mib(1);
        c.broker.subscriptions.policy = policy;
        c.broker.subscriptions.block_timeout = Duration::from_millis(300);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drop_oldest_counts_every_drop_and_keeps_the_newest() {
    let srv = TestServer::start(small_queues(SlowConsumerPolicy::DropOldest)).await;
    let mut sub = Raw::connect(&srv.addr).await;
    sub.subscribe(1, "t", 0).await;
    let mut publ = Raw::connect(&srv.addr).await;
    let n = 20_000;
    flood(&mut publ, "t", 0, n).await;
    let (seqs, dropped) = drain(&mut sub, 1, Duration::from_millis(500)).await;
    assert!(
        dropped > 0,
        "the reader did not read, so records were dropped"
    );
    assert_eq!(
        seqs.len() as u64 + dropped,
        u64::from(n),
        "every record is delivered or counted as dropped"
    );
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "order is kept");
    assert_eq!(seqs.last(), Some(&(n - 1)), "the newest record survives");
    assert!(
        srv.broker
            .stats()
            .records_in
            .load(std::sync::atomic::Ordering::Relaxed)
            >= u64::from(n)
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_policy_cuts_off_only_the_slow_subscriber() {
    let srv = TestServer::start(small_queues(SlowConsumerPolicy::Disconnect)).await;
    let mut slow = Raw::connect(&srv.addr).await;
    slow.subscribe(1, "t", 0).await;
    let mut fast = Raw::connect(&srv.addr).await;
    fast.subscribe(2, "t", 0).await;
    let mut publ = Raw::connect(&srv.addr).await;
    let n: u32 = 20_000;
    // The reader reports how far it got; the publisher never runs more than one frame of
    // 64 KiB ahead of it, so the reader's 1 MiB queue cannot fill however busy the machine
    // is, while the slow subscriber, which reads nothing, falls 20 MiB behind.
    let (got_tx, mut got) = tokio::sync::watch::channel(0usize);
    let reader = tokio::spawn(async move {
        let mut seqs = Vec::new();
        let mut dropped = 0u64;
        while let Some(f) = fast.recv_within(Duration::from_secs(10)).await {
            if let Frame::Deliver { dropped: d, .. } = &f {
                dropped += u64::from(*d);
            }
            seqs.extend(
                delivered(std::slice::from_ref(&f), 2)
                    .iter()
                    .map(|p| seq(p)),
            );
            got_tx.send_replace(seqs.len());
            if seqs.len() == n as usize {
                break;
            }
        }
        (seqs, dropped)
    });
    let recs: Vec<Vec<u8>> = (0..n).map(record).collect();
    for (i, chunk) in recs.chunks(64).enumerate() {
        let refs: Vec<&[u8]> = chunk.iter().map(|v| v.as_slice()).collect();
        publ.publish_acked("t", &refs, i as u64 + 1).await;
        let sent = i * 64 + chunk.len();
        tokio::time::timeout(Duration::from_secs(10), got.wait_for(|&g| g >= sent))
            .await
            .expect("the reading subscriber keeps up")
            .expect("reader alive");
    }
    let (seqs, dropped) = reader.await.expect("reader");
    assert_eq!(dropped, 0, "nothing dropped for the reading subscriber");
    assert_eq!(
        seqs,
        (0..n).collect::<Vec<_>>(),
        "the reading subscriber got everything, in order"
    );
    let frames = slow.closed().await;
    assert!(
        frames.iter().any(|f| matches!(
            f,
            Frame::Error {
                code: ErrorCode::SlowConsumer,
                ..
            }
        )),
        "the slow subscriber is told why it is cut off"
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_policy_holds_the_publisher_without_loss() {
    let srv = TestServer::start(|c| {
        small_queues(SlowConsumerPolicy::Block)(c);
        c.broker.subscriptions.block_timeout = Duration::from_secs(30);
    })
    .await;
    let mut sub = Raw::connect(&srv.addr).await;
    sub.subscribe(1, "t", 0).await;
    let mut publ = Raw::connect(&srv.addr).await;
    let n = 20_000;
    let publisher = tokio::spawn(async move {
        flood(&mut publ, "t", 0, n).await;
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !publisher.is_finished(),
        "the publisher waits for the slow reader"
    );
    let (seqs, dropped) = drain(&mut sub, 1, Duration::from_millis(1000)).await;
    publisher
        .await
        .expect("publisher finishes once the reader reads");
    assert_eq!(dropped, 0);
    assert_eq!(seqs, (0..n).collect::<Vec<_>>());
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_policy_disconnects_a_reader_stuck_past_the_timeout() {
    let srv = TestServer::start(small_queues(SlowConsumerPolicy::Block)).await;
    let mut stuck = Raw::connect(&srv.addr).await;
    stuck.subscribe(1, "t", 0).await;
    let mut publ = Raw::connect(&srv.addr).await;
    // Finishes: after the 300 ms timeout the stuck subscriber is cut off.
    tokio::time::timeout(Duration::from_secs(20), flood(&mut publ, "t", 0, 20_000))
        .await
        .expect("the publisher is not held forever");
    let frames = stuck.closed().await;
    assert!(frames.iter().any(|f| matches!(
        f,
        Frame::Error {
            code: ErrorCode::SlowConsumer,
            ..
        }
    )));
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn high_priority_overtakes_queued_bulk_records() {
    let srv =
        TestServer::start(|c| c.broker.subscriptions.policy = SlowConsumerPolicy::Block).await;
    let mut sub = Raw::connect(&srv.addr).await;
    sub.subscribe(1, "robot/#", 0).await;
    let mut publ = Raw::connect(&srv.addr).await;
    // More bulk than the socket buffers hold, so most of it waits in the queue.
    let n = 30_000;
    flood(&mut publ, "robot/bulk", 0, n).await;
    let mut alarm = record(u32::MAX);
    alarm[4] = 1;
    publ.publish("robot/estop", &[&alarm], 99, FLAG_HIGH_PRIORITY)
        .await;
    publ.recv_until(|f| matches!(f, Frame::PubAck { request_id: 99, .. }))
        .await;
    let mut order = Vec::new();
    let mut high_flag = false;
    while order.len() < n as usize + 1 {
        let f = sub.recv().await;
        if let Frame::Deliver { flags, topic, .. } = &f {
            if topic.as_str() == "robot/estop" {
                high_flag = flags & FLAG_HIGH_PRIORITY != 0;
            }
        }
        order.extend(
            delivered(std::slice::from_ref(&f), 1)
                .iter()
                .map(|p| seq(p)),
        );
    }
    let at = order
        .iter()
        .position(|&s| s == u32::MAX)
        .expect("alarm delivered");
    assert!(high_flag, "delivered with the priority flag");
    assert!(
        at < n as usize - 1000,
        "alarm at position {at} of {}: it must overtake the queued bulk",
        order.len()
    );
    let bulk: Vec<u32> = order.iter().copied().filter(|&s| s != u32::MAX).collect();
    assert_eq!(
        bulk,
        (0..n).collect::<Vec<_>>(),
        "bulk order is kept around it"
    );
    srv.stop().await;
}

/// Regression: with room for part of a batch, a blocked publisher spun
/// between "full" and "has room" and starved a one-thread runtime.
#[tokio::test(flavor = "current_thread")]
async fn block_policy_with_partial_room_on_one_thread() {
    let srv = TestServer::start(|c| {
        small_queues(SlowConsumerPolicy::Block)(c);
        c.broker.subscriptions.max_records = 500;
        c.broker.subscriptions.block_timeout = Duration::from_secs(30);
    })
    .await;
    let mut sub = Raw::connect(&srv.addr).await;
    sub.subscribe(1, "t", 0).await;
    let mut publ = Raw::connect(&srv.addr).await;
    let n = 5_000;
    let publisher = tokio::spawn(async move { flood(&mut publ, "t", 0, n).await });
    let (seqs, dropped) = tokio::time::timeout(
        Duration::from_secs(30),
        drain(&mut sub, 1, Duration::from_millis(1500)),
    )
    .await
    .expect("no livelock");
    publisher.await.expect("publisher finishes");
    assert_eq!(dropped, 0);
    assert_eq!(seqs, (0..n).collect::<Vec<_>>());
    srv.stop().await;
}
