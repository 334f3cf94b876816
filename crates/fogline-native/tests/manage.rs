//! Managing streams and consumers over the native protocol: every verb, its answer, and its
//! errors with their codes; the connection list sees native clients with their traffic.

mod common;

use common::{Raw, TestServer};
use fogline_broker::{Protocol, StorageMode};
use fogline_wire::{
    ErrorCode, Frame, StartPosition, Storage, StreamDetail, StreamSpec, NODE_DEFAULT,
};

fn spec(name: &str, subjects: &[&str]) -> StreamSpec {
    StreamSpec {
        name: name.into(),
        storage: None,
        subjects: subjects.iter().map(|s| (*s).into()).collect(),
        retention_bytes: NODE_DEFAULT,
        retention_age_ms: NODE_DEFAULT,
        segment_bytes: NODE_DEFAULT,
    }
}

/// Sends `frame` and returns the answer to `request_id` (skipping anything else).
async fn ask(c: &mut Raw, frame: Frame) -> Frame {
    let id = match &frame {
        Frame::StreamCreate { request_id, .. }
        | Frame::StreamUpdate { request_id, .. }
        | Frame::StreamPurge { request_id, .. }
        | Frame::StreamDelete { request_id, .. }
        | Frame::StreamGet { request_id, .. }
        | Frame::ConsumerList { request_id, .. }
        | Frame::ConsumerDelete { request_id, .. } => *request_id,
        other => panic!("not a request: {other:?}"),
    };
    c.send(&frame).await;
    c.recv_until(|f| match f {
        Frame::StreamOk { request_id, .. }
        | Frame::ConsumerListOk { request_id, .. }
        | Frame::Done { request_id }
        | Frame::Error { request_id, .. } => *request_id == id,
        _ => false,
    })
    .await
}

fn detail(f: Frame) -> StreamDetail {
    match f {
        Frame::StreamOk { stream, .. } => stream,
        other => panic!("expected StreamOk, got {other:?}"),
    }
}

fn code(f: &Frame) -> ErrorCode {
    match f {
        Frame::Error { code, .. } => *code,
        other => panic!("expected Error, got {other:?}"),
    }
}

#[tokio::test]
async fn streams_are_created_changed_purged_and_deleted() {
    let srv = TestServer::start(|c| c.broker.storage = StorageMode::Mmap).await;
    let mut c = Raw::connect(&srv.addr).await;
    let mut s = spec("lab", &["lab/#"]);
    s.storage = Some(Storage::Fsync);
    s.retention_bytes = 1 << 20;
    s.retention_age_ms = 0;
    let d = detail(
        ask(
            &mut c,
            Frame::StreamCreate {
                request_id: 1,
                spec: s.clone(),
            },
        )
        .await,
    );
    assert_eq!(d.name.as_str(), "lab");
    assert_eq!(d.storage, Storage::Fsync);
    assert_eq!((d.retention_bytes, d.retention_age_ms), (1 << 20, 0));
    assert!(!d.retention_bytes_default && !d.retention_age_default);
    let again = ask(
        &mut c,
        Frame::StreamCreate {
            request_id: 2,
            spec: s,
        },
    )
    .await;
    assert_eq!(code(&again), ErrorCode::Duplicate);

    c.publish_acked("lab/1", &[b"a", b"b", b"c"], 3).await;
    let d = detail(
        ask(
            &mut c,
            Frame::StreamGet {
                request_id: 4,
                name: "lab".into(),
            },
        )
        .await,
    );
    assert_eq!((d.records, d.next_offset), (3, 3));
    assert!(d.first_timestamp > 0 && d.last_timestamp >= d.first_timestamp);

    let d = detail(
        ask(
            &mut c,
            Frame::StreamUpdate {
                request_id: 5,
                name: "lab".into(),
                subjects: Some(vec!["lab/+/x".into(), "other/#".into()]),
                retention_bytes: Some(NODE_DEFAULT),
                retention_age_ms: None,
            },
        )
        .await,
    );
    assert_eq!(d.subjects.len(), 2);
    assert!(d.retention_bytes_default, "back to the node's default");
    assert_eq!(d.retention_bytes, 1 << 30);

    let d = detail(
        ask(
            &mut c,
            Frame::StreamPurge {
                request_id: 6,
                name: "lab".into(),
            },
        )
        .await,
    );
    assert_eq!((d.records, d.first_offset, d.next_offset), (0, 3, 3));

    let done = ask(
        &mut c,
        Frame::StreamDelete {
            request_id: 7,
            name: "lab".into(),
        },
    )
    .await;
    assert_eq!(done, Frame::Done { request_id: 7 });
    let gone = ask(
        &mut c,
        Frame::StreamGet {
            request_id: 8,
            name: "lab".into(),
        },
    )
    .await;
    assert_eq!(code(&gone), ErrorCode::UnknownStream);
    srv.stop().await;
}

#[tokio::test]
async fn bad_requests_get_the_codes_a_client_can_act_on() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = Raw::connect(&srv.addr).await;
    let cases = [
        (spec("a/b", &["x"]), ErrorCode::Invalid),
        (spec("ok", &[]), ErrorCode::Invalid),
        (spec("ok", &["a/#/b"]), ErrorCode::Invalid),
        (
            StreamSpec {
                segment_bytes: 0,
                ..spec("ok", &["x"])
            },
            ErrorCode::Invalid,
        ),
        (
            StreamSpec {
                storage: Some(Storage::Mmap),
                ..spec("ok", &["x"])
            },
            ErrorCode::Invalid, // this node keeps no files
        ),
    ];
    for (i, (s, want)) in cases.into_iter().enumerate() {
        let f = ask(
            &mut c,
            Frame::StreamCreate {
                request_id: i as u64 + 1,
                spec: s,
            },
        )
        .await;
        assert_eq!(code(&f), want, "case {i}: {f:?}");
    }
    let f = ask(
        &mut c,
        Frame::StreamUpdate {
            request_id: 20,
            name: "nope".into(),
            subjects: None,
            retention_bytes: Some(5),
            retention_age_ms: None,
        },
    )
    .await;
    assert_eq!(code(&f), ErrorCode::UnknownStream);
    let f = ask(
        &mut c,
        Frame::ConsumerDelete {
            request_id: 21,
            stream: "default".into(),
            name: "nope".into(),
        },
    )
    .await;
    assert_eq!(code(&f), ErrorCode::UnknownConsumer);
    // The connection goes on after every refusal.
    c.publish_acked("t", &[b"still here"], 22).await;
    srv.stop().await;
}

#[tokio::test]
async fn consumers_are_listed_and_deleted() {
    let srv = TestServer::start(|c| c.broker.storage = StorageMode::Mmap).await;
    let mut c = Raw::connect(&srv.addr).await;
    c.publish_acked("t", &[b"1", b"2", b"3", b"4"], 1).await;
    let (id, _) = c
        .consumer("default", "worker", StartPosition::Earliest, 30_000, 0)
        .await;
    let got = c.fetch(id, 2, 0).await;
    assert_eq!(got.len(), 2);
    c.send(&Frame::Ack {
        consumer_id: id,
        offsets: vec![0],
    })
    .await;
    // The ack and the list travel in order on this connection.
    let list = ask(
        &mut c,
        Frame::ConsumerList {
            request_id: 2,
            stream: "".into(),
            name: "".into(),
        },
    )
    .await;
    let Frame::ConsumerListOk { consumers, .. } = list else {
        panic!("expected ConsumerListOk, got {list:?}");
    };
    assert_eq!(consumers.len(), 1);
    let w = &consumers[0];
    assert_eq!((w.stream.as_str(), w.name.as_str()), ("default", "worker"));
    assert!(w.open);
    assert_eq!(
        (w.ack_floor, w.cursor, w.pending_acks, w.lag),
        (1, Some(2), 1, 3)
    );
    let busy = ask(
        &mut c,
        Frame::ConsumerDelete {
            request_id: 3,
            stream: "default".into(),
            name: "worker".into(),
        },
    )
    .await;
    assert_eq!(code(&busy), ErrorCode::Duplicate, "open: refused");
    c.send(&Frame::ConsumerClose { consumer_id: id }).await;
    let one = ask(
        &mut c,
        Frame::ConsumerList {
            request_id: 4,
            stream: "default".into(),
            name: "worker".into(),
        },
    )
    .await;
    let Frame::ConsumerListOk { consumers, .. } = one else {
        panic!("expected ConsumerListOk, got {one:?}");
    };
    assert!(!consumers[0].open);
    assert_eq!(consumers[0].cursor, None);
    let done = ask(
        &mut c,
        Frame::ConsumerDelete {
            request_id: 5,
            stream: "default".into(),
            name: "worker".into(),
        },
    )
    .await;
    assert_eq!(done, Frame::Done { request_id: 5 });
    let none = ask(
        &mut c,
        Frame::ConsumerList {
            request_id: 6,
            stream: "default".into(),
            name: "worker".into(),
        },
    )
    .await;
    assert_eq!(code(&none), ErrorCode::UnknownConsumer);
    srv.stop().await;
}

#[tokio::test]
async fn native_connections_are_listed_with_their_traffic() {
    let srv = TestServer::start(|_| {}).await;
    let mut sub = Raw::connect(&srv.addr).await;
    sub.subscribe(1, "t", 0).await;
    let mut publ = Raw::connect(&srv.addr).await;
    publ.publish_acked("t", &[b"one", b"two"], 1).await;
    common::collect(&mut sub, 1, 2).await;
    let clients = srv.broker.clients().list();
    assert_eq!(clients.len(), 2);
    assert!(clients.iter().all(|c| c.protocol == Protocol::Native));
    assert_eq!(clients[0].name.as_deref(), Some("test"), "the Hello's name");
    assert!(clients[0].addr.starts_with("127.0.0.1:"));
    assert_eq!(clients[1].traffic.records_in, 2);
    assert_eq!(clients[0].traffic.records_out, 2);
    drop(publ);
    drop(sub);
    srv.stop().await;
}

#[tokio::test]
async fn many_pipelined_requests_are_each_answered_once() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = Raw::connect(&srv.addr).await;
    for id in 1..=200u64 {
        c.send(&Frame::StreamGet {
            request_id: id,
            name: if id % 2 == 0 { "default" } else { "none" }.into(),
        })
        .await;
    }
    let mut answered = std::collections::BTreeSet::new();
    while answered.len() < 200 {
        let id = match c.recv().await {
            Frame::StreamOk { request_id, .. } => {
                assert_eq!(request_id % 2, 0);
                request_id
            }
            Frame::Error {
                request_id, code, ..
            } => {
                assert_eq!(code, ErrorCode::UnknownStream);
                assert_eq!(request_id % 2, 1);
                request_id
            }
            other => panic!("{other:?}"),
        };
        assert!(answered.insert(id), "answered twice: {id}");
    }
    // And the connection still serves the data path.
    c.publish_acked("t", &[b"after"], 1000).await;
    srv.stop().await;
}
