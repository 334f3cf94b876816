//! `fsync` storage: a client's pipelined QoS 1 PUBLISHes are stored as they arrive and share
//! flushes; once durable they are delivered in order [MQTT-4.6.0-5] and acknowledged in the
//! order received; nothing sent after them overtakes them; a failed flush refuses them.

mod common;

use common::*;
use fogline_broker::StorageMode;
use fogline_mqtt::codec::{Packet, Version};

async fn fsync_server() -> TestServer {
    TestServer::start_in(tempfile::tempdir().expect("tempdir"), |c| {
        c.broker.storage = StorageMode::Fsync
    })
    .await
}

/// Sends QoS 1 PUBLISHes with packet ids `1..=n` without waiting, then reads `n` PUBACKs:
/// (packet id, reason) in the order they came.
async fn pipeline(c: &mut Raw, topic: &str, n: u16) -> Vec<(u16, u8)> {
    for i in 1..=n {
        let p = publish(topic, format!("{i}").as_bytes(), QoS::AtLeastOnce, i);
        c.send(&Packet::Publish(p)).await;
    }
    let mut acks = Vec::new();
    while acks.len() < usize::from(n) {
        match c.recv().await {
            Some(Packet::PubAck(a)) => acks.push((a.pkid, a.reason)),
            Some(_) => {}
            None => panic!("connection closed after {} PUBACKs", acks.len()),
        }
    }
    acks
}

/// The default stream made at most `max` flushes.
fn assert_flushes_at_most(srv: &TestServer, max: u64, what: &str) {
    let stream = srv.broker.stream("default").expect("default stream");
    let flushes = stream.flushes();
    assert!(flushes <= max, "{flushes} flushes for {what}");
}

/// A client that got one QoS 1 message acknowledged, on a server whose next flush fails.
async fn flush_fails_next(v: Version) -> (TestServer, Raw) {
    let srv = fsync_server().await;
    let (mut c, _) = Raw::connect(&srv.mqtt, connect_packet(v, "fs-f", true)).await;
    c.publish_qos1(publish("t", b"before", QoS::AtLeastOnce, 900))
        .await;
    srv.broker
        .stream("default")
        .expect("default stream")
        .fail_next_flush();
    (srv, c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_qos1_publishes_share_flushes_and_are_acked_in_order() {
    let srv = fsync_server().await;
    let (mut c, _) = Raw::connect(&srv.mqtt, connect_packet(Version::V5, "fs-p", true)).await;
    // 600: more than a connection lets wait at once (256), so the reader also pauses.
    let acks = pipeline(&mut c, "t", 600).await;
    let want: Vec<(u16, u8)> = (1..=600).map(|i| (i, 0)).collect();
    assert_eq!(acks, want, "every PUBACK, in order, success");
    assert_flushes_at_most(&srv, 150, "600 pipelined QoS 1 messages");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqtt_4_6_0_5_nothing_overtakes_qos1_messages_waiting_for_their_flush() {
    let srv = fsync_server().await;
    let (mut sub, _) = Raw::connect(&srv.mqtt, connect_packet(Version::V5, "fs-s", true)).await;
    sub.subscribe(1, vec![filter("t", QoS::AtLeastOnce)]).await;
    let (mut c, _) = Raw::connect(&srv.mqtt, connect_packet(Version::V5, "fs-p", true)).await;
    for i in 1..=50u16 {
        let p = publish("t", format!("{i}").as_bytes(), QoS::AtLeastOnce, i);
        c.send(&Packet::Publish(p)).await;
    }
    c.send(&Packet::Publish(publish("t", b"last", QoS::AtMostOnce, 0)))
        .await;
    let mut got = Vec::new();
    for _ in 0..51 {
        got.push(sub.expect_publish().await.payload.to_vec());
    }
    let mut want: Vec<Vec<u8>> = (1..=50).map(|i| format!("{i}").into_bytes()).collect();
    want.push(b"last".to_vec());
    assert_eq!(got, want, "delivered in the order sent");
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqtt_3_4_2_1_a_failed_flush_refuses_the_pipelined_messages_it_covers() {
    let (srv, mut c) = flush_fails_next(Version::V5).await;
    let acks = pipeline(&mut c, "t", 20).await;
    let want: Vec<(u16, u8)> = (1..=20).map(|i| (i, 0x80)).collect();
    assert_eq!(acks, want, "each refused with 0x80, in order");
    srv.stop().await;
}

/// 3.1.1 cannot refuse a PUBLISH: the connection closes [MQTT-3.3.5-2].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqtt_3_3_5_2_a_failed_flush_closes_a_3_1_1_connection() {
    let (srv, mut c) = flush_fails_next(Version::V4).await;
    // One write: the server may close the connection after the first message, and a write
    // after that would fail in the test rather than in the server.
    let mut bytes = bytes::BytesMut::new();
    for i in 1..=5u16 {
        let p = publish("t", format!("{i}").as_bytes(), QoS::AtLeastOnce, i);
        fogline_mqtt::codec::encode(&Packet::Publish(p), Version::V4, &mut bytes).unwrap();
    }
    c.send_raw(&bytes).await;
    let seen = c.expect_close().await;
    assert!(
        !seen.iter().any(|p| matches!(p, Packet::PubAck(_))),
        "no PUBACK after the failed flush: {seen:?}"
    );
    srv.stop().await;
}

/// QoS 1 messages still waiting for their flush when the client disconnects (DISCONNECT, or
/// the socket closing) are delivered all the same: they are stored. (Each client reads until
/// the server closes, so neither side resets the connection.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qos1_messages_waiting_at_the_end_of_a_connection_are_delivered() {
    let srv = fsync_server().await;
    let (mut sub, _) = Raw::connect(&srv.mqtt, connect_packet(Version::V5, "fs-s", true)).await;
    sub.subscribe(1, vec![filter("t", QoS::AtMostOnce)]).await;
    for (id, polite) in [("fs-d", true), ("fs-h", false)] {
        let (mut c, _) = Raw::connect(&srv.mqtt, connect_packet(Version::V4, id, true)).await;
        for i in 1..=30u16 {
            let p = publish("t", format!("{id}-{i}").as_bytes(), QoS::AtLeastOnce, i);
            c.send(&Packet::Publish(p)).await;
        }
        if polite {
            c.send(&Packet::Disconnect(Disconnect::default())).await;
        } else {
            // A hang-up with a FIN: closing with unread PUBACKs would reset the connection,
            // and a reset discards what the server had not read yet.
            tokio::io::AsyncWriteExt::shutdown(&mut c.sock)
                .await
                .expect("half-close");
        }
        c.expect_close().await;
        for i in 1..=30u16 {
            let got = sub.expect_publish().await;
            assert_eq!(&got.payload[..], format!("{id}-{i}").as_bytes());
        }
    }
    srv.stop().await;
}

/// QoS 2 pipelines too: PUBRECs come in order once the messages are durable, and each
/// message reaches the subscriber exactly once [MQTT-4.3.3-9].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_qos2_publishes_share_flushes_and_arrive_once() {
    let srv = fsync_server().await;
    let (mut sub, _) = Raw::connect(&srv.mqtt, connect_packet(Version::V5, "fs-s2", true)).await;
    sub.subscribe(1, vec![filter("t", QoS::AtMostOnce)]).await;
    let (mut c, _) = Raw::connect(&srv.mqtt, connect_packet(Version::V5, "fs-p2", true)).await;
    let n = 300u16;
    for i in 1..=n {
        let p = publish("t", format!("{i}").as_bytes(), QoS::ExactlyOnce, i);
        c.send(&Packet::Publish(p)).await;
    }
    // A redelivery of the last one while it may still wait for its flush: not stored twice.
    let mut again = publish("t", format!("{n}").as_bytes(), QoS::ExactlyOnce, n);
    again.dup = true;
    c.send(&Packet::Publish(again)).await;
    let mut recs = Vec::new();
    while recs.len() < usize::from(n) + 1 {
        match c.recv().await {
            Some(Packet::PubRec(a)) => recs.push((a.pkid, a.reason)),
            Some(_) => {}
            None => panic!("connection closed after {} PUBRECs", recs.len()),
        }
    }
    let mut want: Vec<(u16, u8)> = (1..=n).map(|i| (i, 0)).collect();
    want.push((n, 0));
    assert_eq!(recs, want, "every PUBREC, in order, success");
    assert_flushes_at_most(&srv, 75, "300 pipelined QoS 2 messages");
    for i in 1..=n {
        c.send(&Packet::PubRel(Ack::ok(i))).await;
    }
    let mut comps = 0;
    while comps < n {
        if let Some(Packet::PubComp(_)) = c.recv().await {
            comps += 1;
        }
    }
    for i in 1..=n {
        let got = sub.expect_publish().await;
        assert_eq!(&got.payload[..], format!("{i}").as_bytes());
    }
    sub.expect_silence(200).await;
    srv.stop().await;
}

/// While flushes lag, a connection lets at most 256 messages wait and stops reading; once
/// they are durable it reads on and acknowledges the rest, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_stops_reading_while_256_messages_wait() {
    let srv = fsync_server().await;
    let stream = srv
        .broker
        .stream("default")
        .expect("default stream")
        .clone();
    stream.hold_flushes(true);
    let (mut c, _) = Raw::connect(&srv.mqtt, connect_packet(Version::V5, "fs-b", true)).await;
    for i in 1..=300u16 {
        let p = publish("t", b"x", QoS::AtLeastOnce, i);
        c.send(&Packet::Publish(p)).await;
    }
    for _ in 0..5000 {
        if stream.stats().next_offset >= 256 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(stream.stats().next_offset, 256, "stored no more than 256");
    stream.hold_flushes(false);
    let mut acked = Vec::new();
    while acked.len() < 300 {
        match c.recv().await {
            Some(Packet::PubAck(a)) => acked.push(a.pkid),
            Some(_) => {}
            None => panic!("closed after {} PUBACKs", acked.len()),
        }
    }
    assert_eq!(acked, (1..=300).collect::<Vec<_>>());
    srv.stop().await;
}
