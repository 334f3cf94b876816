//! Durable delivery: replay by offset and time, acks, redelivery, resume, push.

mod common;

use std::time::Duration;

use common::{Raw, TestServer};
use fogline_broker::StorageMode;
use fogline_wire::{ErrorCode, Frame, StartPosition};

fn payloads(n: u32) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("rec-{i}").into_bytes()).collect()
}

async fn publish_all(c: &mut Raw, topic: &str, n: u32) {
    let p = payloads(n);
    let refs: Vec<&[u8]> = p.iter().map(|v| v.as_slice()).collect();
    c.publish_acked(topic, &refs, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_from_earliest_offset_and_latest() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = Raw::connect(&srv.addr).await;
    publish_all(&mut c, "a/b", 50).await;
    let (id, next) = c
        .consumer("default", "", StartPosition::Earliest, 0, 0)
        .await;
    assert_eq!(next, 0);
    let got = c.fetch(id, 100, 0).await;
    assert_eq!(got.len(), 50);
    assert!(got
        .iter()
        .enumerate()
        .all(|(i, (o, d, p))| *o == i as u64 && *d == 1 && p == format!("rec-{i}").as_bytes()));

    let (id2, next2) = c
        .consumer("default", "", StartPosition::Offset(45), 0, 0)
        .await;
    assert_eq!(next2, 45);
    let got = c.fetch(id2, 100, 0).await;
    assert_eq!(
        got.iter().map(|r| r.0).collect::<Vec<_>>(),
        (45..50).collect::<Vec<_>>()
    );

    let (id3, next3) = c.consumer("default", "", StartPosition::Latest, 0, 0).await;
    assert_eq!(next3, 50);
    assert!(c.fetch(id3, 10, 0).await.is_empty());
    // A waiting fetch is answered as soon as a record arrives.
    let mut p = Raw::connect(&srv.addr).await;
    c.send(&Frame::Fetch {
        consumer_id: id3,
        max_records: 10,
        max_wait_ms: 5000,
    })
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    p.publish_acked("a/b", &[b"late"], 2).await;
    match c.recv_until(|f| matches!(f, Frame::Records { .. })).await {
        Frame::Records { records, .. } => {
            assert_eq!(records.iter().next().map(|r| r.offset), Some(50))
        }
        _ => unreachable!(),
    }
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_by_time() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = Raw::connect(&srv.addr).await;
    publish_all(&mut c, "t", 10).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mark = fogline_broker::now_micros();
    tokio::time::sleep(Duration::from_millis(20)).await;
    publish_all(&mut c, "t", 5).await;
    let (id, next) = c
        .consumer("default", "", StartPosition::Time(mark), 0, 0)
        .await;
    assert_eq!(next, 10);
    assert_eq!(c.fetch(id, 100, 0).await.len(), 5);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unacked_records_are_redelivered_after_the_timeout() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = Raw::connect(&srv.addr).await;
    publish_all(&mut c, "t", 4).await;
    let (id, _) = c
        .consumer("default", "", StartPosition::Earliest, 200, 0)
        .await;
    let first = c.fetch(id, 10, 0).await;
    assert_eq!(first.len(), 4);
    c.send(&Frame::Ack {
        consumer_id: id,
        offsets: vec![0, 2],
    })
    .await;
    // Nothing new, nothing expired yet.
    assert!(c.fetch(id, 10, 0).await.is_empty());
    let again = c.fetch(id, 10, 2000).await;
    assert_eq!(
        again.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(),
        vec![(1, 2), (3, 2)]
    );
    c.send(&Frame::Ack {
        consumer_id: id,
        offsets: vec![1, 3],
    })
    .await;
    assert!(c.fetch(id, 10, 400).await.is_empty());
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn durable_consumer_resumes_after_reconnect_and_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().to_path_buf();
    let tune = |c: &mut common::Config| {
        c.broker.storage = StorageMode::Mmap;
        c.broker.data_dir = data.clone();
        c.broker.segment_bytes = bytesize::ByteSize::kib(64);
    };
    let srv = TestServer::start(tune).await;
    let mut c = Raw::connect(&srv.addr).await;
    publish_all(&mut c, "t", 20).await;
    let (id, _) = c
        .consumer("default", "worker", StartPosition::Resume, 10_000, 0)
        .await;
    let got = c.fetch(id, 8, 0).await;
    assert_eq!(got.len(), 8);
    c.send(&Frame::Ack {
        consumer_id: id,
        offsets: (0..8).collect(),
    })
    .await;
    // The same name twice at once is refused.
    let mut other = Raw::connect(&srv.addr).await;
    other
        .send(&Frame::ConsumerOpen {
            request_id: 5,
            stream: "default".into(),
            name: "worker".into(),
            filter: "".into(),
            start: StartPosition::Resume,
            ack_timeout_ms: 0,
            max_inflight: 10,
            push_credit: 0,
        })
        .await;
    match other.recv().await {
        Frame::Error {
            request_id: 5,
            code: ErrorCode::Duplicate,
            ..
        } => {}
        f => panic!("expected Duplicate, got {f:?}"),
    }
    c.send(&Frame::ConsumerClose { consumer_id: id }).await;
    c.send(&Frame::Ping { nonce: 1 }).await;
    c.recv_until(|f| matches!(f, Frame::Pong { .. })).await;
    let (id, next) = c
        .consumer("default", "worker", StartPosition::Resume, 10_000, 0)
        .await;
    assert_eq!(next, 8);
    c.send(&Frame::ConsumerClose { consumer_id: id }).await;
    c.send(&Frame::Ping { nonce: 2 }).await;
    c.recv_until(|f| matches!(f, Frame::Pong { .. })).await;
    drop(c);
    drop(other);
    srv.stop().await;

    let srv = TestServer::start(tune).await;
    let mut c = Raw::connect(&srv.addr).await;
    let (id, next) = c
        .consumer("default", "worker", StartPosition::Resume, 10_000, 0)
        .await;
    assert_eq!(next, 8, "position survives a restart");
    let rest = c.fetch(id, 100, 0).await;
    assert_eq!(
        rest.iter().map(|r| r.0).collect::<Vec<_>>(),
        (8..20).collect::<Vec<_>>()
    );
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_mode_respects_credit() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = Raw::connect(&srv.addr).await;
    publish_all(&mut c, "t", 10).await;
    let (id, _) = c
        .consumer("default", "", StartPosition::Earliest, 0, 4)
        .await;
    let mut got = 0;
    while got < 4 {
        if let Frame::Records { records, .. } = c.recv().await {
            got += records.count();
        }
    }
    assert_eq!(got, 4);
    assert!(
        c.recv_within(Duration::from_millis(200)).await.is_none(),
        "no records beyond the credit"
    );
    c.send(&Frame::Credit {
        consumer_id: id,
        credit: 100,
    })
    .await;
    let mut offsets = Vec::new();
    while offsets.len() < 6 {
        if let Frame::Records { records, .. } = c.recv().await {
            offsets.extend(records.iter().map(|r| r.offset));
        }
    }
    assert_eq!(offsets, (4..10).collect::<Vec<_>>());
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_stream_and_consumer_are_errors() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = Raw::connect(&srv.addr).await;
    c.send(&Frame::ConsumerOpen {
        request_id: 9,
        stream: "nope".into(),
        name: "".into(),
        filter: "".into(),
        start: StartPosition::Earliest,
        ack_timeout_ms: 0,
        max_inflight: 1,
        push_credit: 0,
    })
    .await;
    assert!(matches!(
        c.recv().await,
        Frame::Error {
            request_id: 9,
            code: ErrorCode::UnknownStream,
            ..
        }
    ));
    c.send(&Frame::Fetch {
        consumer_id: 77,
        max_records: 1,
        max_wait_ms: 0,
    })
    .await;
    assert!(matches!(
        c.recv().await,
        Frame::Error {
            request_id: 77,
            code: ErrorCode::UnknownConsumer,
            ..
        }
    ));
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_capture_by_subject_and_list() {
    let srv = TestServer::start(|c| {
        c.broker.streams = vec![fogline_broker::StreamConfig {
            name: "lidar".into(),
            subjects: vec!["site/+/lidar".into()],
            storage: None,
            retention_bytes: None,
            retention_age: None,
            segment_bytes: None,
            sql: None,
        }];
    })
    .await;
    let mut c = Raw::connect(&srv.addr).await;
    c.publish_acked("site/r1/lidar", &[b"1"], 1).await;
    c.publish_acked("site/r1/camera", &[b"2"], 2).await;
    c.send(&Frame::StreamList { request_id: 3 }).await;
    match c.recv().await {
        Frame::StreamListOk {
            request_id: 3,
            streams,
        } => {
            assert_eq!(streams.len(), 1);
            assert_eq!(streams[0].name.as_str(), "lidar");
            assert_eq!(streams[0].records, 1);
        }
        f => panic!("unexpected {f:?}"),
    }
    srv.stop().await;
}
