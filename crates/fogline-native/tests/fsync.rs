//! `fsync` storage end to end: acknowledged publishes of several connections are durable and
//! replayable when acknowledged (their flushes are shared), live subscribers get them, and
//! fire-and-forget records become replayable too.

mod common;

use std::collections::HashSet;
use std::time::Duration;

use common::{collect, Raw, TestServer};
use fogline_broker::StorageMode;
use fogline_wire::Frame;
use fogline_wire::StartPosition;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acked_publishes_of_many_connections_are_replayable_when_acked() {
    let srv = TestServer::start(|c| c.broker.storage = StorageMode::Fsync).await;
    let mut sub = Raw::connect(&srv.addr).await;
    sub.subscribe(1, "t/#", 0).await;
    let publishers: Vec<_> = (0..4u32)
        .map(|p| {
            let addr = srv.addr.clone();
            tokio::spawn(async move {
                let mut c = Raw::connect(&addr).await;
                for i in 0..25u32 {
                    let payload = format!("{p}-{i}");
                    c.publish_acked(&format!("t/{p}"), &[payload.as_bytes()], u64::from(i) + 1)
                        .await;
                }
            })
        })
        .collect();
    for p in publishers {
        p.await.unwrap();
    }
    let stream = srv.broker.stream("default").unwrap().clone();
    assert!(stream.flushes() >= 1, "acked publishes were flushed");
    // Everything acknowledged is already readable: a consumer opened now gets all of it.
    let mut c = Raw::connect(&srv.addr).await;
    let (id, _) = c
        .consumer("default", "all", StartPosition::Earliest, 0, 0)
        .await;
    let got = c.fetch(id, 200, 0).await;
    let names: HashSet<Vec<u8>> = got.iter().map(|(_, _, p)| p.to_vec()).collect();
    assert_eq!(names.len(), 100);
    let live = collect(&mut sub, 1, 100).await;
    assert_eq!(live.len(), 100);

    // Fire-and-forget records are flushed too, with nobody waiting.
    c.publish("t/ff", &[b"a", b"b"], 0, 0).await;
    let mut more = Vec::new();
    while more.len() < 2 {
        more.extend(c.fetch(id, 10, 1000).await);
    }
    assert_eq!(more.len(), 2);
    srv.stop().await;
}

/// Sends `n` acked single-record batches on `topic` without waiting, then reads the answers:
/// (request ids acked, in the order the acks came; error frames' request ids).
async fn pipeline(c: &mut Raw, topic: &str, n: u64) -> (Vec<u64>, Vec<u64>) {
    for i in 1..=n {
        c.publish(topic, &[format!("{i}").as_bytes()], i, 0).await;
    }
    let (mut acked, mut failed) = (Vec::new(), Vec::new());
    while (acked.len() + failed.len()) < n as usize {
        match c.recv().await {
            Frame::PubAck { request_id, .. } => acked.push(request_id),
            Frame::Error { request_id, .. } => failed.push(request_id),
            _ => {}
        }
    }
    (acked, failed)
}

/// One connection that pipelines acked batches gets them flushed together: the server stores
/// each as it arrives instead of waiting for the previous one's flush, and acks them in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connections_pipelined_acked_batches_share_flushes() {
    let srv = TestServer::start(|c| c.broker.storage = StorageMode::Fsync).await;
    let mut c = Raw::connect(&srv.addr).await;
    // 600: more than a connection lets wait at once (256), so the reader also pauses.
    let (acked, failed) = pipeline(&mut c, "t", 600).await;
    assert!(failed.is_empty());
    assert_eq!(acked, (1..=600).collect::<Vec<_>>(), "acked in order");
    let flushes = srv.broker.stream("default").unwrap().flushes();
    assert!(
        flushes <= 150,
        "{flushes} flushes for 600 pipelined batches of one connection"
    );
    srv.stop().await;
}

/// Pipelined acked batches reach a live subscriber in order, and a fire-and-forget record
/// sent after them (same topic) does not overtake them while they wait for their flush.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_overtakes_acked_batches_waiting_for_their_flush() {
    let srv = TestServer::start(|c| c.broker.storage = StorageMode::Fsync).await;
    let mut sub = Raw::connect(&srv.addr).await;
    sub.subscribe(1, "t", 0).await;
    let mut c = Raw::connect(&srv.addr).await;
    for i in 1..=50u64 {
        c.publish("t", &[format!("{i}").as_bytes()], i, 0).await;
    }
    c.publish("t", &[b"last"], 0, 0).await;
    let got = collect(&mut sub, 1, 51).await;
    let mut want: Vec<Vec<u8>> = (1..=50).map(|i| format!("{i}").into_bytes()).collect();
    want.push(b"last".to_vec());
    assert_eq!(
        got.iter().map(|b| b.to_vec()).collect::<Vec<_>>(),
        want,
        "delivered in the order sent"
    );
    srv.stop().await;
}

/// A client that sends acked batches and hangs up at once: what the server stored is still
/// delivered to live subscribers and replayable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acked_batches_stored_before_a_hang_up_are_delivered() {
    let srv = TestServer::start(|c| c.broker.storage = StorageMode::Fsync).await;
    let mut sub = Raw::connect(&srv.addr).await;
    sub.subscribe(1, "t", 0).await;
    let stream = srv.broker.stream("default").unwrap().clone();
    stream.hold_flushes(true);
    let mut c = Raw::connect(&srv.addr).await;
    for i in 1..=30u64 {
        c.publish("t", &[format!("{i}").as_bytes()], i, 0).await;
    }
    // The server stores all 30 and can answer none while flushes are held; then the client
    // hangs up (no ack was sent, so nothing is unread and the close is clean).
    wait_stored(&stream, 30).await;
    drop(c);
    tokio::time::sleep(Duration::from_millis(50)).await;
    stream.hold_flushes(false);
    let got = collect(&mut sub, 1, 30).await;
    assert_eq!(got.len(), 30);
    assert_eq!(&got[29][..], b"30");
    srv.stop().await;
}

/// Waits until `stream` has appended `n` records (durable or not).
async fn wait_stored(stream: &fogline_broker::Stream, n: u64) {
    for _ in 0..5000 {
        if stream.stats().next_offset >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("{n} records not stored: {}", stream.stats().next_offset);
}

/// While flushes lag, a connection lets at most 256 acked batches wait and stops reading;
/// once they are durable it reads on and answers the rest, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_stops_reading_while_256_batches_wait() {
    let srv = TestServer::start(|c| c.broker.storage = StorageMode::Fsync).await;
    let stream = srv.broker.stream("default").unwrap().clone();
    stream.hold_flushes(true);
    let mut c = Raw::connect(&srv.addr).await;
    for i in 1..=300u64 {
        c.publish("t", &[b"x"], i, 0).await;
    }
    wait_stored(&stream, 256).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(stream.stats().next_offset, 256, "stored no more than 256");
    stream.hold_flushes(false);
    let mut acked = Vec::new();
    while acked.len() < 300 {
        if let Frame::PubAck { request_id, .. } = c.recv().await {
            acked.push(request_id);
        }
    }
    assert_eq!(acked, (1..=300).collect::<Vec<_>>());
    srv.stop().await;
}

/// A failed flush fails every pipelined batch it was to cover: none of them is acked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_flush_fails_the_pipelined_batches_it_covers() {
    let srv = TestServer::start(|c| c.broker.storage = StorageMode::Fsync).await;
    let mut c = Raw::connect(&srv.addr).await;
    c.publish_acked("t", &[b"before"], 1000).await;
    srv.broker.stream("default").unwrap().fail_next_flush();
    let (acked, failed) = pipeline(&mut c, "t", 20).await;
    assert!(
        acked.is_empty(),
        "acked despite the failed flush: {acked:?}"
    );
    assert_eq!(failed, (1..=20).collect::<Vec<_>>(), "errors in order");
    srv.stop().await;
}

/// A refused acked batch (an invalid topic) is answered after the batches sent before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_batch_is_answered_in_turn() {
    let srv = TestServer::start(|c| c.broker.storage = StorageMode::Fsync).await;
    let mut c = Raw::connect(&srv.addr).await;
    for i in 1..=20u64 {
        c.publish("t", &[b"x"], i, 0).await;
    }
    c.publish("bad/#", &[b"x"], 21, 0).await;
    let mut answers = Vec::new();
    while answers.len() < 21 {
        match c.recv().await {
            Frame::PubAck { request_id, .. } => answers.push((request_id, true)),
            Frame::Error { request_id, .. } => answers.push((request_id, false)),
            _ => {}
        }
    }
    let mut want: Vec<(u64, bool)> = (1..=20).map(|i| (i, true)).collect();
    want.push((21, false));
    assert_eq!(answers, want);
    srv.stop().await;
}
