//! What one client may hold or cost the server: consumers at their in-flight limit, fetch
//! and push batches, names, per-connection counts, silent and non-reading peers.

mod common;

use std::time::{Duration, Instant};

use common::{Raw, TestServer};
use fogline_wire::{ErrorCode, Frame, StartPosition};

/// CPU time this process has used (user + system), from /proc.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    let fields: Vec<&str> = stat[stat.rfind(')').expect("comm") + 2..]
        .split_whitespace()
        .collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    Duration::from_millis(ticks * 1000 / hz.max(1))
}

async fn open(c: &mut Raw, name: &str, ack_timeout_ms: u32, max_inflight: u32, push: u32) -> Frame {
    c.send(&Frame::ConsumerOpen {
        request_id: 9,
        stream: "default".into(),
        name: name.into(),
        filter: "".into(),
        start: StartPosition::Earliest,
        ack_timeout_ms,
        max_inflight,
        push_credit: push,
    })
    .await;
    c.recv_until(|f| matches!(f, Frame::ConsumerOk { .. } | Frame::Error { .. }))
        .await
}

fn consumer_id(f: &Frame) -> u32 {
    match f {
        Frame::ConsumerOk { consumer_id, .. } => *consumer_id,
        other => panic!("expected ConsumerOk, got {other:?}"),
    }
}

fn error_code(f: &Frame) -> ErrorCode {
    match f {
        Frame::Error { code, .. } => *code,
        other => panic!("expected an Error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_at_its_inflight_limit_waits_without_spinning() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = Raw::connect(&srv.addr).await;
    let p: Vec<Vec<u8>> = (0..10).map(|i| vec![i; 8]).collect();
    let refs: Vec<&[u8]> = p.iter().map(|v| v.as_slice()).collect();
    c.publish_acked("t", &refs, 1).await;
    let id = consumer_id(&open(&mut c, "", 30_000, 2, 0).await);
    assert_eq!(c.fetch(id, 10, 0).await.len(), 2);
    // Two records wait for acks and eight are stored: the fetch must wait out its time
    // asleep. It spun on a core for the whole second before.
    let cpu = process_cpu();
    let started = Instant::now();
    assert!(c.fetch(id, 10, 1000).await.is_empty());
    let waited = started.elapsed();
    let used = process_cpu() - cpu;
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
    assert!(
        used < Duration::from_millis(300),
        "used {used:?} of CPU in {waited:?}"
    );
    // An ack makes room at once.
    c.send(&Frame::Ack {
        consumer_id: id,
        offsets: vec![0],
    })
    .await;
    let next = c.fetch(id, 10, 1000).await;
    assert_eq!(next.iter().map(|r| r.0).collect::<Vec<_>>(), vec![2]);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_hands_out_a_bounded_number_of_bytes() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = Raw::connect(&srv.addr).await;
    let big = vec![3u8; 1 << 20];
    for i in 0..12 {
        c.publish_acked("t", &[&big], 100 + i).await;
    }
    let id = consumer_id(&open(&mut c, "", 0, 0, 0).await);
    let mut offsets = Vec::new();
    while offsets.len() < 12 {
        let got = c.fetch(id, 1000, 0).await;
        assert!(!got.is_empty());
        // 4 MiB a poll, plus the record that crosses the limit.
        assert!(
            got.len() <= 5,
            "{} records of 1 MiB in one fetch",
            got.len()
        );
        offsets.extend(got.iter().map(|r| r.0));
    }
    assert_eq!(offsets, (0..12).collect::<Vec<_>>());
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_fetch_answers_the_waiting_one_empty() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = Raw::connect(&srv.addr).await;
    let id = consumer_id(&open(&mut c, "", 0, 0, 0).await);
    for wait in [60_000, 60_000] {
        c.send(&Frame::Fetch {
            consumer_id: id,
            max_records: 10,
            max_wait_ms: wait,
        })
        .await;
    }
    // The first fetch gave way to the second, answered at once with nothing.
    match c.recv_within(Duration::from_secs(5)).await {
        Some(Frame::Records { records, .. }) => assert_eq!(records.count(), 0),
        other => panic!("expected an empty Records, got {other:?}"),
    }
    // The second one still waits, and gets the next record.
    let mut p = Raw::connect(&srv.addr).await;
    p.publish_acked("t", &[b"x"], 1).await;
    match c.recv().await {
        Frame::Records { records, .. } => assert_eq!(records.count(), 1),
        other => panic!("expected Records, got {other:?}"),
    }
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_consumer_with_much_credit_goes_at_the_readers_pace() {
    // 24 MiB of records against 8 MiB of reply room: the server disconnected such a
    // consumer as "not reading its replies" when it queued everything at once.
    let srv = TestServer::start(|c| {
        c.server.max_pending_replies = bytesize::ByteSize::mib(8);
    })
    .await;
    let mut p = Raw::connect(&srv.addr).await;
    let big = vec![5u8; 1 << 20];
    for i in 0..24 {
        p.publish_acked("t", &[&big], 10 + i).await;
    }
    let mut c = Raw::connect(&srv.addr).await;
    consumer_id(&open(&mut c, "", 0, 0, 1000).await);
    // Not read for a while: the server must wait, not give up.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut got = 0;
    while got < 24 {
        match c.recv().await {
            Frame::Records { records, .. } => got += records.count(),
            other => panic!("expected Records, got {other:?}"),
        }
    }
    assert_eq!(got, 24);
    // Still connected: nothing was cut off.
    c.send(&Frame::Ping { nonce: 42 }).await;
    assert!(matches!(c.recv().await, Frame::Pong { nonce: 42 }));
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_name_cannot_reach_outside_the_stream() {
    let srv = TestServer::start(|c| c.broker.storage = fogline_broker::StorageMode::Mmap).await;
    let outside = srv.dir.path().join("escaped");
    let mut c = Raw::connect(&srv.addr).await;
    c.publish_acked("t", &[b"a"], 1).await;
    for bad in [
        format!("/{}", outside.display()),
        "../../escaped".to_string(),
        ".hidden".into(),
        "a/b".into(),
        "x".repeat(65),
    ] {
        let f = open(&mut c, &bad, 0, 0, 0).await;
        assert_eq!(error_code(&f), ErrorCode::InvalidName, "{bad}");
    }
    assert!(!outside.exists());
    // A good name still works and keeps its position.
    let id = consumer_id(&open(&mut c, "dash-1.v2_a", 0, 0, 0).await);
    assert_eq!(c.fetch(id, 10, 0).await.len(), 1);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_and_subscriptions_per_connection_are_limited() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = Raw::connect(&srv.addr).await;
    for _ in 0..1024 {
        consumer_id(&open(&mut c, "", 0, 0, 0).await);
    }
    assert_eq!(
        error_code(&open(&mut c, "", 0, 0, 0).await),
        ErrorCode::TooMany
    );
    for id in 1..=4096u32 {
        c.send(&Frame::Subscribe {
            sub_id: id,
            flags: 0,
            filter: format!("s/{id}").into(),
        })
        .await;
    }
    for _ in 1..=4096u32 {
        assert!(matches!(c.recv().await, Frame::SubOk { .. }));
    }
    c.send(&Frame::Subscribe {
        sub_id: 5000,
        flags: 0,
        filter: "s/x".into(),
    })
    .await;
    assert_eq!(error_code(&c.recv().await), ErrorCode::TooMany);
    // The connection goes on.
    c.publish_acked("s/1", &[b"ok"], 3).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_of_no_records_is_refused_and_queues_nothing() {
    let srv = TestServer::start(|c| {
        c.broker.subscriptions.max_bytes = bytesize::ByteSize::kib(64);
    })
    .await;
    let mut slow = Raw::connect(&srv.addr).await;
    slow.subscribe(1, "#", 0).await;
    let mut c = Raw::connect(&srv.addr).await;
    c.publish("t", &[], 7, 0).await;
    assert_eq!(error_code(&c.recv().await), ErrorCode::EmptyRequest);
    // Fire-and-forget ones are refused too, and none reaches the subscriber's queue.
    for _ in 0..1000 {
        c.publish("t", &[], 0, 0).await;
    }
    for _ in 0..1000 {
        assert_eq!(error_code(&c.recv().await), ErrorCode::EmptyRequest);
    }
    let mut p = Raw::connect(&srv.addr).await;
    p.publish_acked("t", &[b"after"], 8).await;
    assert_eq!(common::collect(&mut slow, 1, 1).await, vec![&b"after"[..]]);
    assert_eq!(srv.broker.stream("default").unwrap().bounds(), (0, 1));
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_never_says_hello_is_closed() {
    let srv = TestServer::start(|c| c.server.hello_timeout = Duration::from_millis(300)).await;
    let mut c = Raw::connect_bare(&srv.addr).await;
    let started = Instant::now();
    let frames = c.closed().await;
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        matches!(
            frames.as_slice(),
            [Frame::Error {
                code: ErrorCode::NotConnected,
                ..
            }]
        ),
        "{frames:?}"
    );
    // A client that says Hello in time is served, and is not cut off later.
    let mut ok = Raw::connect(&srv.addr).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    ok.publish_acked("t", &[b"x"], 1).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_is_disconnected_after_the_write_stall() {
    let srv = TestServer::start(|c| {
        c.server.write_stall = Duration::from_millis(500);
        c.broker.subscriptions.policy = fogline_broker::SlowConsumerPolicy::DropOldest;
    })
    .await;
    let mut sub = Raw::connect(&srv.addr).await;
    sub.subscribe(1, "#", 0).await;
    // Far more than the socket buffers hold, while the subscriber reads nothing: its
    // queue drops the oldest, so only the stalled write can end it.
    let mut p = Raw::connect(&srv.addr).await;
    let chunk = vec![1u8; 64 << 10];
    for i in 0..400 {
        p.publish("t", &[&chunk], 0, 0).await;
        if i % 50 == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    // What was sent before the close can still be read; then the stream ends.
    let started = Instant::now();
    sub.closed().await;
    assert!(started.elapsed() < Duration::from_secs(9), "still open");
    srv.stop().await;
}

/// This process's data segment (heap and anonymous mappings), from /proc.
fn vm_data() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmData:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmData");
    kib << 10
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_messages_queued_for_a_slow_subscriber_hold_only_their_own_bytes() {
    let srv = TestServer::start(|c| {
        c.broker.subscriptions.max_records = 1_000_000;
        c.broker.subscriptions.max_bytes = bytesize::ByteSize::gib(1);
    })
    .await;
    let mut slow = Raw::connect(&srv.addr).await;
    slow.subscribe(1, "s/#", 0).await;
    let mut p = Raw::connect(&srv.addr).await;
    // Fill the subscriber's socket buffers, so what follows waits in its queue.
    let big = vec![2u8; 1 << 20];
    for i in 0..24 {
        p.publish_acked("s/big", &[&big], 1_000_000 + i).await;
    }
    let before = vm_data();
    // One acked message at a time: each arrives in a read of its own. Each held its 64 KiB
    // read buffer while queued (8,000 x 64 KiB = 500 MiB).
    for i in 0..8_000u64 {
        p.publish_acked("s/x", &[&[1u8; 100]], i + 1).await;
    }
    let grown = vm_data().saturating_sub(before);
    assert!(grown < 128 << 20, "grew by {} MiB", grown >> 20);
    srv.stop().await;
}
