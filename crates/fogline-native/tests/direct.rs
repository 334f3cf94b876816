//! Deliveries written on the publisher's task (`crate::direct`): whatever mix of direct
//! writes, partial writes and queued passes a subscriber gets, its frames arrive whole and
//! in order, and a subscription's `SubOk` comes before its first delivery.

mod common;

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{Raw, TestServer};
use fogline_broker::SlowConsumerPolicy;
use fogline_wire::Frame;
use tokio::net::TcpSocket;

const N: u32 = 12_000;

/// A payload of `len` bytes: the sequence number, then a fill derived from it.
fn seq_payload(i: u32, len: usize) -> Vec<u8> {
    let mut p = vec![(i % 251) as u8; len];
    p[..4].copy_from_slice(&i.to_le_bytes());
    p
}

/// A subscriber on `topic` with a small receive buffer, so the server's socket fills and
/// direct writes go partial.
async fn small_window_subscriber(srv: &TestServer, rcvbuf: u32, topic: &str) -> Raw {
    let sock = TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(rcvbuf).unwrap();
    let sock = sock.connect(srv.addr.parse().unwrap()).await.unwrap();
    let mut sub = Raw::hello(sock).await;
    sub.subscribe(1, topic, 0).await;
    sub
}

/// Reads `n` records of subscription 1, checking order and contents; pauses `pause` before
/// every `every`-th record.
async fn read_in_order(sub: &mut Raw, n: u32, every: u32, pause: Duration) {
    let mut next = 0u32;
    while next < n {
        if next % every == 0 {
            tokio::time::sleep(pause).await;
        }
        match sub.recv().await {
            Frame::Deliver {
                sub_id: 1, records, ..
            } => {
                for r in records.iter() {
                    let seq = u32::from_le_bytes(r.payload[..4].try_into().unwrap());
                    assert_eq!(seq, next, "in order, none lost");
                    let fill = (seq % 251) as u8;
                    assert!(r.payload[4..].iter().all(|&b| b == fill), "intact");
                    next += 1;
                }
            }
            f => panic!("unexpected {f:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_still_gets_every_frame_in_order() {
    let srv = TestServer::start(|c| {
        let q = &mut c.broker.subscriptions;
        q.max_records = 1 << 20;
        q.max_bytes = bytesize::ByteSize::mib(256);
        q.policy = SlowConsumerPolicy::Block;
        q.block_timeout = Duration::from_secs(60);
    })
    .await;
    let mut sub = small_window_subscriber(&srv, 4096, "d").await;
    let mut publ = Raw::connect(&srv.addr).await;
    // One frame per write, with pauses, so the server mostly reads them one at a time
    // (the direct path) and sometimes several at once (the queued path).
    for i in 0..N {
        publ.publish("d", &[&seq_payload(i, 1000)], 0, 0).await;
        if i % 50 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    read_in_order(&mut sub, N, u32::MAX, Duration::ZERO).await;
    let direct = srv.broker.stats().direct_deliveries.load(Ordering::Relaxed);
    eprintln!("{direct} of {N} deliveries went direct");
    assert!(direct > 0, "some deliveries went direct");
    assert!(direct < u64::from(N), "some went through the queue");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_ok_comes_before_the_subscriptions_first_delivery() {
    let srv = TestServer::start(|_| {}).await;
    let mut sub = Raw::connect(&srv.addr).await;
    sub.subscribe(1, "s", 0).await;
    let mut publ = Raw::connect(&srv.addr).await;
    let flood = tokio::spawn(async move {
        // Mostly one frame per read (the direct path), through all the subscribes below.
        for i in 0..2_000u32 {
            publ.publish("s", &[&i.to_le_bytes()], 0, 0).await;
            if i % 2 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        publ
    });
    // Subscribe while deliveries are being written directly.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while srv.broker.stats().direct_deliveries.load(Ordering::Relaxed) == 0 {
        assert!(tokio::time::Instant::now() < deadline, "no direct delivery");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for id in 2..=200u32 {
        sub.send(&Frame::Subscribe {
            sub_id: id,
            flags: 0,
            filter: "s".into(),
        })
        .await;
        if id % 10 == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let mut confirmed = HashSet::from([1]);
    let mut deliveries = 0u64;
    while confirmed.len() < 200 {
        match sub.recv().await {
            Frame::SubOk { sub_id } => {
                confirmed.insert(sub_id);
            }
            Frame::Deliver { sub_id, .. } => {
                assert!(
                    confirmed.contains(&sub_id),
                    "delivery for {sub_id} before its SubOk"
                );
                deliveries += 1;
            }
            f => panic!("unexpected {f:?}"),
        }
    }
    let _publ = flood.await.unwrap();
    assert!(deliveries > 0);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_deliveries_to_a_reader_in_spurts_arrive_whole() {
    // 20 KB records go direct (below the shared-block size) and, with the subscriber's
    // buffer full, some direct writes are partial: the writer must send their rest first.
    const M: u32 = 1000;
    let srv = TestServer::start(|c| {
        let q = &mut c.broker.subscriptions;
        q.policy = SlowConsumerPolicy::Block;
        q.block_timeout = Duration::from_secs(60);
    })
    .await;
    let mut sub = small_window_subscriber(&srv, 16 * 1024, "big").await;
    let mut publ = Raw::connect(&srv.addr).await;
    let flood = tokio::spawn(async move {
        for i in 0..M {
            publ.publish("big", &[&seq_payload(i, 20_000)], 0, 0).await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        publ
    });
    // Pauses long enough for the socket's buffers (a few MB on loopback) to fill.
    read_in_order(&mut sub, M, 400, Duration::from_millis(500)).await;
    let _publ = flood.await.unwrap();
    let direct = srv.broker.stats().direct_deliveries.load(Ordering::Relaxed);
    eprintln!("{direct} of {M} deliveries went direct");
    assert!(direct > 0);
    srv.stop().await;
}
