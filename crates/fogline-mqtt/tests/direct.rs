//! Messages written on the publisher's task (`fogline_mqtt`'s direct path): whatever mix of
//! direct writes, partial writes and queued passes a subscriber gets, its packets arrive
//! whole and in order, QoS 0 never overtakes QoS 1 on a subscription, a takeover's
//! DISCONNECT is the last packet, not cut into a half-written PUBLISH, and a QoS 1 message
//! written directly but never acknowledged is sent again after a reconnect.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use fogline_mqtt::codec::{Ack, Packet, Version};
use tokio::net::TcpSocket;

fn seq_payload(i: u32, len: usize) -> Vec<u8> {
    let mut p = vec![(i % 251) as u8; len];
    p[..4].copy_from_slice(&i.to_le_bytes());
    p
}

fn check(p: &[u8], want: u32) {
    let seq = u32::from_le_bytes(p[..4].try_into().unwrap());
    assert_eq!(seq, want, "in order, none lost");
    assert!(p[4..].iter().all(|&b| b == (seq % 251) as u8), "intact");
}

/// A QoS 0 subscriber to `topic` with a small receive buffer, so the server's socket fills
/// and direct writes go partial.
async fn small_window_subscriber(srv: &TestServer, client: &str, clean: bool, topic: &str) -> Raw {
    let sock = TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(16 * 1024).unwrap();
    let sock = sock.connect(srv.mqtt.parse().unwrap()).await.unwrap();
    let (mut sub, _) = Raw::connect_on(sock, connect_packet(Version::V5, client, clean)).await;
    sub.subscribe(1, vec![filter(topic, QoS::AtMostOnce)]).await;
    sub
}

/// Publishes `n` QoS 0 messages of 20 KB to `topic`, one per write, 1 ms apart (so the
/// server mostly reads them one at a time: the direct path).
fn flood(srv: &TestServer, topic: &'static str, n: u32) -> tokio::task::JoinHandle<Raw> {
    let addr = srv.mqtt.clone();
    tokio::spawn(async move {
        let (mut publ, _) = Raw::connect(
            &addr,
            connect_packet(Version::V5, &format!("{topic}-pub"), true),
        )
        .await;
        for i in 0..n {
            let p = publish(topic, &seq_payload(i, 20_000), QoS::AtMostOnce, 0);
            publ.send(&Packet::Publish(p)).await;
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        publ
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_in_spurts_gets_every_qos0_message_whole_and_in_order() {
    const M: u32 = 1000;
    let srv = TestServer::start(|c| {
        c.mqtt.slow_subscriber = fogline_broker::SlowConsumerPolicy::Block;
        c.broker.subscriptions.block_timeout = Duration::from_secs(60);
    })
    .await;
    // Long pauses: the socket fills, so some direct writes are partial and the connection
    // task must send their rest first.
    let mut sub = small_window_subscriber(&srv, "d-sub", true, "d/big").await;
    let publisher = flood(&srv, "d/big", M);
    for i in 0..M {
        if i % 400 == 0 {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        check(&sub.expect_publish().await.payload, i);
    }
    let _publ = publisher.await.unwrap();
    assert!(srv.broker.stats().direct_deliveries.load(Ordering::Relaxed) > 0);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn qos0_does_not_overtake_qos1_on_one_subscription() {
    const M: u32 = 400;
    let srv = TestServer::start(|_| {}).await;
    let mut c = connect_packet(Version::V5, "o-sub", true);
    c.props.receive_maximum = Some(2);
    let (mut sub, _) = Raw::connect(&srv.mqtt, c).await;
    sub.subscribe(1, vec![filter("o/t", QoS::AtLeastOnce)])
        .await;
    let (mut publ, _) = Raw::connect(&srv.mqtt, connect_packet(Version::V5, "o-pub", true)).await;
    let flood = tokio::spawn(async move {
        for i in 0..M {
            let qos = if i % 3 == 0 {
                QoS::AtLeastOnce
            } else {
                QoS::AtMostOnce
            };
            let pkid = if qos == QoS::AtMostOnce {
                0
            } else {
                (i + 1) as u16
            };
            publ.send(&Packet::Publish(publish(
                "o/t",
                &seq_payload(i, 16),
                qos,
                pkid,
            )))
            .await;
            if i % 5 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        publ
    });
    for i in 0..M {
        let p = sub.expect_publish().await;
        check(&p.payload, i);
        if p.qos != QoS::AtMostOnce {
            // Acked late, so the receive maximum holds QoS 1 messages back now and then.
            if i % 7 == 0 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            sub.send(&Packet::PubAck(Ack::ok(p.pkid))).await;
        }
    }
    let _publ = flood.await.unwrap();
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_disconnect_comes_after_whole_packets() {
    let srv = TestServer::start(|_| {}).await;
    let mut first = small_window_subscriber(&srv, "t-sub", false, "t/big").await;
    let publisher = flood(&srv, "t/big", 300);
    // Let the socket fill (likely leaving a partial direct write), then take over.
    tokio::time::sleep(Duration::from_millis(150)).await;
    let (_second, _) = Raw::connect(&srv.mqtt, connect_packet(Version::V5, "t-sub", false)).await;
    let got = first.expect_close().await;
    let (last, before) = got.split_last().expect("packets before the close");
    assert!(
        matches!(last, Packet::Disconnect(d) if d.reason == 0x8E),
        "last packet {last:?}"
    );
    let mut next = 0u32;
    for p in before {
        match p {
            Packet::Publish(p) => {
                // QoS 0 may drop messages but never reorders or corrupts them.
                let seq = u32::from_le_bytes(p.payload[..4].try_into().unwrap());
                assert!(seq >= next, "in order");
                check(&p.payload, seq);
                next = seq + 1;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let _publ = publisher.await.unwrap();
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_qos1_message_left_unacked_is_sent_again_after_reconnect() {
    let srv = TestServer::start(|_| {}).await;
    let mut c = connect_packet(Version::V5, "r-sub", false);
    c.props.session_expiry = Some(300);
    let (mut sub, _) = Raw::connect(&srv.mqtt, c.clone()).await;
    sub.subscribe(1, vec![filter("r/t", QoS::AtLeastOnce)])
        .await;
    let (mut publ, _) = Raw::connect(&srv.mqtt, connect_packet(Version::V5, "r-pub", true)).await;
    // Let the subscriber's task finish its turn and go idle (it does after writing SUBACK).
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = srv.broker.stats().direct_deliveries.load(Ordering::Relaxed);
    publ.publish_qos1(publish("r/t", b"once", QoS::AtLeastOnce, 9))
        .await;
    let first = sub.expect_publish().await;
    assert_eq!(
        (first.qos, first.dup, &first.payload[..]),
        (QoS::AtLeastOnce, false, &b"once"[..])
    );
    assert_eq!(
        srv.broker.stats().direct_deliveries.load(Ordering::Relaxed),
        before + 1,
        "written on the publisher's task"
    );
    drop(sub); // never acknowledged
    let (mut again, ack) = Raw::connect(&srv.mqtt, c).await;
    assert!(ack.session_present);
    let p = again.expect_publish().await;
    assert_eq!(
        (p.qos, p.dup, p.pkid, &p.payload[..]),
        (QoS::AtLeastOnce, true, first.pkid, &b"once"[..])
    );
    again.send(&Packet::PubAck(Ack::ok(p.pkid))).await;
    again.expect_silence(200).await;
    srv.stop().await;
}
