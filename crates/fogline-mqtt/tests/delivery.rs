//! Delivery rules on raw bytes: subscription identifiers on overlapping
//! subscriptions, replacing a subscription, Server Keep Alive, and nothing
//! processed after a refused CONNECT.

mod common;

use std::time::Duration;

use bytes::BytesMut;
use common::*;
use fogline_mqtt::codec::{self, Packet, Properties, Version};

/// Each copy of a message matching overlapping subscriptions carries the
/// identifier of the subscription it was sent for.
#[tokio::test]
async fn mqtt_3_3_4_3_and_3_3_4_5_each_copy_carries_its_subscription_identifier() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "ids2", true)).await;
    for (pkid, f, id) in [(1, "ov/#", 11), (2, "ov/+", 22)] {
        let props = Properties {
            subscription_ids: vec![id],
            ..Properties::default()
        };
        sub.subscribe_with(pkid, vec![filter(f, QoS::AtMostOnce)], props)
            .await;
    }
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "ids2p", true)).await;
    p.send(&Packet::Publish(publish("ov/x", b"x", QoS::AtMostOnce, 0)))
        .await;
    let mut ids: Vec<Vec<u32>> = vec![
        sub.expect_publish().await.props.subscription_ids.clone(),
        sub.expect_publish().await.props.subscription_ids.clone(),
    ];
    ids.sort();
    assert_eq!(ids, vec![vec![11], vec![22]]);
    s.stop().await;
}

/// SUBSCRIBE with a filter already subscribed replaces the subscription
/// (new QoS) without losing or doubling messages, and with Retain Handling 0
/// sends the retained message again.
#[tokio::test]
async fn mqtt_3_8_4_3_and_3_8_4_4_resubscribing_replaces_and_resends_retained() {
    let s = TestServer::start(|_| {}).await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "rsp", true)).await;
    let mut r = publish("rs/a", b"kept", QoS::AtLeastOnce, 1);
    r.retain = true;
    p.publish_qos1(r).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "rss", true)).await;
    sub.subscribe(1, vec![filter("rs/#", QoS::AtMostOnce)])
        .await;
    assert!(sub.expect_publish().await.retain);
    sub.subscribe(2, vec![filter("rs/#", QoS::AtLeastOnce)])
        .await;
    let again = sub.expect_publish().await;
    assert!(again.retain && &again.payload[..] == b"kept");
    sub.send(&Packet::PubAck(Ack::ok(again.pkid))).await;
    p.publish_qos1(publish("rs/b", b"live", QoS::AtLeastOnce, 2))
        .await;
    let live = sub.expect_publish().await;
    assert_eq!(
        (&live.payload[..], live.qos),
        (&b"live"[..], QoS::AtLeastOnce)
    );
    sub.send(&Packet::PubAck(Ack::ok(live.pkid))).await;
    sub.expect_silence(300).await; // one subscription, one copy
    s.stop().await;
}

/// Re-subscribing with another No Local option replaces the subscription's
/// options in place: messages queued for it while the client is behind
/// (receive maximum 1, session queue of 1, the rest waiting in the broker's
/// subscription queue) all arrive, in order.
#[tokio::test]
async fn mqtt_3_8_4_4_changing_no_local_loses_no_queued_message() {
    let s = TestServer::start(|c| c.mqtt.max_queued = 1).await;
    let mut c = connect_packet(Version::V5, "nlq", true);
    c.props.receive_maximum = Some(1);
    let (mut sub, _) = Raw::connect(&s.mqtt, c).await;
    sub.subscribe(1, vec![filter("nlq/#", QoS::AtLeastOnce)])
        .await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "nlqp", true)).await;
    for i in 0..6u16 {
        let body = format!("m{i}");
        p.publish_qos1(publish("nlq/a", body.as_bytes(), QoS::AtLeastOnce, i + 1))
            .await;
    }
    let first = sub.expect_publish().await;
    let mut nl = filter("nlq/#", QoS::AtLeastOnce);
    nl.no_local = true;
    sub.subscribe(2, vec![nl]).await;
    let mut got = vec![String::from_utf8_lossy(&first.payload).into_owned()];
    sub.send(&Packet::PubAck(Ack::ok(first.pkid))).await;
    while got.len() < 6 {
        let m = sub.expect_publish().await;
        got.push(String::from_utf8_lossy(&m.payload).into_owned());
        sub.send(&Packet::PubAck(Ack::ok(m.pkid))).await;
    }
    assert_eq!(got, ["m0", "m1", "m2", "m3", "m4", "m5"]);
    sub.expect_silence(300).await;
    s.stop().await;
}

/// A Server Keep Alive in CONNACK is the keep-alive the server enforces.
#[tokio::test]
async fn mqtt_3_2_2_21_and_3_1_2_22_the_server_keep_alive_is_enforced() {
    let s = TestServer::start(|c| c.mqtt.max_keep_alive = 1).await;
    let (mut raw, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "ska", true)).await;
    assert_eq!(ack.props.server_keep_alive, Some(1));
    let start = std::time::Instant::now();
    let got = raw.expect_close().await;
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "{:?}",
        start.elapsed()
    );
    assert!(
        matches!(&got[..], [Packet::Disconnect(d)] if d.reason == 0x8D),
        "{got:?}"
    );
    s.stop().await;
}

/// Packets sent right behind a refused CONNECT are not processed.
#[tokio::test]
async fn mqtt_3_1_4_5_v311_and_3_1_4_6_v5_nothing_after_a_refused_connect_is_processed() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "watch", true)).await;
    sub.subscribe(1, vec![filter("refused/#", QoS::AtMostOnce)])
        .await;
    // 3.1.1: empty client id with clean session 0 (return code 0x02);
    // 5.0: an authentication method (0x8C).
    let mut v4 = connect_packet(Version::V4, "", false);
    v4.keep_alive = 0;
    let mut v5 = connect_packet(Version::V5, "refused5", true);
    v5.props.auth_method = Some("SCRAM-SHA-1".into());
    for (c, code) in [(v4, 0x02), (v5, 0x8C)] {
        let v = c.version;
        let mut bytes = BytesMut::new();
        codec::encode(&Packet::Connect(Box::new(c)), v, &mut bytes).expect("encode");
        let p = publish("refused/x", b"must not pass", QoS::AtMostOnce, 0);
        codec::encode(&Packet::Publish(p), v, &mut bytes).expect("encode");
        let mut raw = Raw::open(&s.mqtt, v).await;
        raw.send_raw(&bytes).await;
        let got = raw.expect_close().await;
        assert!(
            matches!(&got[..], [Packet::ConnAck(a)] if a.code == code && !a.session_present),
            "{got:?}"
        );
    }
    sub.expect_silence(300).await;
    s.stop().await;
}
