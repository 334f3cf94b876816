//! Bad input costs only the offending connection; the server keeps serving.

mod common;

use common::{collect, Raw, TestServer};
use fogline_wire::{ErrorCode, Frame};

/// A healthy client still gets through.
async fn server_still_serves(addr: &str) {
    let mut c = Raw::connect(addr).await;
    c.subscribe(1, "health", 0).await;
    c.publish_acked("health", &[b"ok"], 1).await;
    assert_eq!(collect(&mut c, 1, 1).await, vec![&b"ok"[..]]);
}

fn closing_error(frames: &[Frame]) -> Option<ErrorCode> {
    frames.iter().find_map(|f| match f {
        Frame::Error { code, .. } => Some(*code),
        _ => None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_message_is_refused_and_the_connection_goes_on() {
    let srv = TestServer::start(|c| c.broker.max_message_bytes = bytesize::ByteSize::kib(1)).await;
    let mut c = Raw::connect(&srv.addr).await;
    let big = vec![7u8; 2048];
    c.publish("t", &[b"small", &big], 5, 0).await;
    match c.recv().await {
        Frame::Error {
            request_id: 5,
            code: ErrorCode::MessageTooLarge,
            message,
        } => {
            assert!(message.contains("2048"), "{message}");
        }
        f => panic!("expected MessageTooLarge, got {f:?}"),
    }
    // Nothing of the refused batch was stored.
    let (_, next) = c
        .consumer("default", "", fogline_wire::StartPosition::Earliest, 0, 0)
        .await;
    assert_eq!(next, 0);
    assert_eq!(
        srv.broker
            .stream("default")
            .expect("default stream")
            .bounds(),
        (0, 0)
    );
    c.publish_acked("t", &[b"fine"], 6).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frame_over_the_limit_closes_only_that_connection() {
    let srv = TestServer::start(|c| c.broker.max_message_bytes = bytesize::ByteSize::kib(1)).await;
    let mut c = Raw::connect(&srv.addr).await;
    let mut prefix = (100u32 << 20).to_le_bytes().to_vec();
    prefix.push(0x10);
    c.send_bytes(&prefix).await;
    assert_eq!(
        closing_error(&c.closed().await),
        Some(ErrorCode::FrameTooLarge)
    );
    server_still_serves(&srv.addr).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_unknown_frames_close_the_connection() {
    let srv = TestServer::start(|_| {}).await;
    // A publish whose record count lies.
    let mut c = Raw::connect(&srv.addr).await;
    let mut bad = Vec::new();
    let body: Vec<u8> = [
        &[0x10u8][..],
        &0u64.to_le_bytes(),
        &[0],
        &1u16.to_le_bytes(),
        b"t",
        &5u32.to_le_bytes(),
    ]
    .concat();
    bad.extend_from_slice(&(body.len() as u32).to_le_bytes());
    bad.extend_from_slice(&body);
    c.send_bytes(&bad).await;
    assert_eq!(closing_error(&c.closed().await), Some(ErrorCode::Malformed));
    // An unknown kind.
    let mut c = Raw::connect(&srv.addr).await;
    c.send_bytes(&[1, 0, 0, 0, 0x6e]).await;
    assert_eq!(
        closing_error(&c.closed().await),
        Some(ErrorCode::UnknownFrame)
    );
    // A server-to-client frame sent by a client.
    let mut c = Raw::connect(&srv.addr).await;
    c.send(&Frame::PubAck {
        request_id: 1,
        count: 1,
    })
    .await;
    assert_eq!(
        closing_error(&c.closed().await),
        Some(ErrorCode::UnknownFrame)
    );
    server_still_serves(&srv.addr).await;
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_must_come_first_with_a_known_version() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = Raw::connect_bare(&srv.addr).await;
    c.send(&Frame::Ping { nonce: 1 }).await;
    assert_eq!(
        closing_error(&c.closed().await),
        Some(ErrorCode::NotConnected)
    );
    let mut c = Raw::connect_bare(&srv.addr).await;
    c.send(&Frame::Hello {
        version: 999,
        client_name: "future".into(),
        credentials: None,
    })
    .await;
    assert_eq!(
        closing_error(&c.closed().await),
        Some(ErrorCode::UnsupportedVersion)
    );
    server_still_serves(&srv.addr).await;
    srv.stop().await;
}

/// Random bytes on many connections: every one is answered or closed, none
/// brings the server down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_garbage_never_takes_the_server_down() {
    let srv = TestServer::start(|_| {}).await;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..200 {
        let mut c = if round % 2 == 0 {
            Raw::connect(&srv.addr).await
        } else {
            Raw::connect_bare(&srv.addr).await
        };
        let len = (next() % 512) as usize;
        let junk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        c.send_bytes(&junk).await;
        drop(c);
    }
    server_still_serves(&srv.addr).await;
    srv.stop().await;
}

/// Issue 31 (7): a header block that claims entries it does not hold was acknowledged and
/// stored; now the frame is malformed: refused, nothing stored, only that connection closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_block_that_does_not_hold_its_count_is_refused() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = Raw::connect(&srv.addr).await;
    // One record: timestamp, headers blob [0xff, 0xff] (65,535 entries, none there), payload.
    let mut block = Vec::new();
    block.extend_from_slice(&0u64.to_le_bytes());
    block.extend_from_slice(&2u32.to_le_bytes());
    block.extend_from_slice(&[0xff, 0xff]);
    block.extend_from_slice(&1u32.to_le_bytes());
    block.push(b'x');
    let mut body = vec![0x10];
    body.extend_from_slice(&9u64.to_le_bytes()); // request id
    body.push(0); // flags
    body.extend_from_slice(&1u16.to_le_bytes());
    body.push(b't');
    body.extend_from_slice(&1u32.to_le_bytes()); // count
    body.extend_from_slice(&block);
    let mut frame = (body.len() as u32).to_le_bytes().to_vec();
    frame.extend_from_slice(&body);
    c.send_bytes(&frame).await;
    let seen = c.closed().await;
    assert_eq!(closing_error(&seen), Some(ErrorCode::Malformed), "{seen:?}");
    assert!(!seen.iter().any(|f| matches!(f, Frame::PubAck { .. })));
    assert_eq!(srv.broker.stream("default").unwrap().bounds(), (0, 0));
    server_still_serves(&srv.addr).await;
    srv.stop().await;
}
