//! Live delivery: ordering, wildcards, fan-out, unsubscribe, topic rules.

mod common;

use common::{collect, Raw, TestServer};
use fogline_wire::{ErrorCode, Frame};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_arrive_in_publish_order_per_topic() {
    let srv = TestServer::start(|_| {}).await;
    let mut sub = Raw::connect(&srv.addr).await;
    sub.subscribe(1, "site/robot7/lidar", 0).await;
    let mut publ = Raw::connect(&srv.addr).await;
    let payloads: Vec<Vec<u8>> = (0..5000u32).map(|i| i.to_le_bytes().to_vec()).collect();
    for chunk in payloads.chunks(97) {
        let refs: Vec<&[u8]> = chunk.iter().map(|p| p.as_slice()).collect();
        publ.publish("site/robot7/lidar", &refs, 0, 0).await;
    }
    let got = collect(&mut sub, 1, 5000).await;
    let seqs: Vec<u32> = got
        .iter()
        .map(|p| u32::from_le_bytes([p[0], p[1], p[2], p[3]]))
        .collect();
    assert_eq!(seqs, (0..5000).collect::<Vec<_>>());
    srv.stop().await;
}

/// Large record blocks go to the socket uncopied (vectored writes) between small frames
/// encoded into the write buffer; the subscriber must see every byte in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_and_small_records_interleave_intact() {
    let srv = TestServer::start(|_| {}).await;
    let mut sub = Raw::connect(&srv.addr).await;
    sub.subscribe(1, "cam/#", 0).await;
    let mut publ = Raw::connect(&srv.addr).await;
    let sizes = [10usize, 40_000, 3, 300_000, 33_000, 1, 1 << 20, 64];
    let payloads: Vec<Vec<u8>> = (0..40)
        .map(|i| {
            let n = sizes[i % sizes.len()];
            (0..n).map(|k| (k * 31 + i) as u8).collect()
        })
        .collect();
    for (i, p) in payloads.iter().enumerate() {
        let topic = if i % 2 == 0 { "cam/a" } else { "cam/b" };
        publ.publish(topic, &[p.as_slice()], 0, 0).await;
    }
    let got = collect(&mut sub, 1, payloads.len()).await;
    assert_eq!(got.len(), payloads.len());
    for (i, (g, want)) in got.iter().zip(&payloads).enumerate() {
        assert!(
            g[..] == want[..],
            "record {i} of {} bytes differs",
            want.len()
        );
    }
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wildcards_follow_mqtt_rules() {
    let srv = TestServer::start(|_| {}).await;
    let mut sub = Raw::connect(&srv.addr).await;
    sub.subscribe(1, "site/+/lidar", 0).await;
    sub.subscribe(2, "site/#", 0).await;
    sub.subscribe(3, "#", 0).await;
    sub.subscribe(4, "$SYS/#", 0).await;
    let mut publ = Raw::connect(&srv.addr).await;
    publ.publish_acked("site/r1/lidar", &[b"a"], 1).await;
    publ.publish_acked("site/r1/camera", &[b"b"], 2).await;
    publ.publish_acked("site", &[b"c"], 3).await;
    publ.publish_acked("$SYS/uptime", &[b"d"], 4).await;
    publ.publish_acked("other", &[b"e"], 5).await;
    let mut per_sub: std::collections::BTreeMap<u32, Vec<Vec<u8>>> = Default::default();
    // 1 + 3 + 4 + 1 deliveries in all.
    for _ in 0..9 {
        if let Frame::Deliver {
            sub_id, records, ..
        } = sub.recv().await
        {
            per_sub
                .entry(sub_id)
                .or_default()
                .extend(records.iter().map(|r| r.payload.to_vec()));
        }
    }
    assert_eq!(per_sub[&1], vec![b"a".to_vec()]);
    assert_eq!(
        per_sub[&2],
        vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]
    );
    assert_eq!(
        per_sub[&3],
        vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec(), b"e".to_vec()]
    );
    assert_eq!(per_sub[&4], vec![b"d".to_vec()]);
    assert!(sub
        .recv_within(std::time::Duration::from_millis(200))
        .await
        .is_none());
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fan_out_to_four_subscribers_and_unsubscribe() {
    let srv = TestServer::start(|_| {}).await;
    let mut subs = Vec::new();
    for _ in 0..4 {
        let mut s = Raw::connect(&srv.addr).await;
        s.subscribe(9, "t", 0).await;
        subs.push(s);
    }
    let mut publ = Raw::connect(&srv.addr).await;
    publ.publish_acked("t", &[b"1", b"2"], 1).await;
    for s in &mut subs {
        assert_eq!(collect(s, 9, 2).await, vec![&b"1"[..], &b"2"[..]]);
    }
    subs[0].send(&Frame::Unsubscribe { sub_id: 9 }).await;
    subs[0].send(&Frame::Ping { nonce: 5 }).await;
    assert_eq!(subs[0].recv().await, Frame::Pong { nonce: 5 });
    publ.publish_acked("t", &[b"3"], 2).await;
    for s in &mut subs[1..] {
        assert_eq!(collect(s, 9, 1).await, vec![&b"3"[..]]);
    }
    assert!(subs[0]
        .recv_within(std::time::Duration::from_millis(200))
        .await
        .is_none());
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_topics_and_filters_get_errors_and_the_connection_goes_on() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = Raw::connect(&srv.addr).await;
    c.publish("a/+/b", &[b"x"], 3, 0).await;
    match c.recv().await {
        Frame::Error {
            request_id: 3,
            code: ErrorCode::InvalidTopic,
            ..
        } => {}
        other => panic!("expected InvalidTopic, got {other:?}"),
    }
    c.send(&Frame::Subscribe {
        sub_id: 4,
        flags: 0,
        filter: "a/#/b".into(),
    })
    .await;
    match c.recv().await {
        Frame::Error {
            request_id: 4,
            code: ErrorCode::InvalidFilter,
            ..
        } => {}
        other => panic!("expected InvalidFilter, got {other:?}"),
    }
    c.subscribe(5, "ok/#", 0).await;
    c.send(&Frame::Subscribe {
        sub_id: 5,
        flags: 0,
        filter: "x".into(),
    })
    .await;
    match c.recv().await {
        Frame::Error {
            request_id: 5,
            code: ErrorCode::Duplicate,
            ..
        } => {}
        other => panic!("expected Duplicate, got {other:?}"),
    }
    c.publish_acked("ok/1", &[b"y"], 6).await;
    assert_eq!(collect(&mut c, 5, 1).await, vec![&b"y"[..]]);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unix_socket_listener_serves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("fogline.sock");
    let listen = format!("unix:{}", path.display());
    let srv = TestServer::start(|c| c.server.listen = vec![listen.clone()]).await;
    assert_eq!(srv.addr, listen);
    let mut sock = tokio::net::UnixStream::connect(&path)
        .await
        .expect("connect");
    let mut b = bytes::BytesMut::new();
    fogline_wire::encode(
        &Frame::Hello {
            version: 1,
            client_name: "u".into(),
            credentials: None,
        },
        &mut b,
    )
    .expect("encode");
    fogline_wire::encode(&Frame::Ping { nonce: 42 }, &mut b).expect("encode");
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    sock.write_all(&b).await.expect("write");
    let mut buf = bytes::BytesMut::new();
    let mut frames = Vec::new();
    while frames.len() < 2 {
        sock.read_buf(&mut buf).await.expect("read");
        while let Some(f) = fogline_wire::decode(&mut buf, u32::MAX).expect("valid") {
            frames.push(f);
        }
    }
    assert!(matches!(frames[0], Frame::HelloOk { .. }));
    assert_eq!(frames[1], Frame::Pong { nonce: 42 });
    srv.stop().await;
}
