//! PUBLISH flows (QoS 0, 1, 2), redelivery, flow control, topic aliases,
//! message expiry, on raw bytes.

mod common;

use std::time::Duration;

use common::*;
use fogline_mqtt::codec::{Packet, Properties, Version};

async fn subscriber(s: &TestServer, v: Version, id: &str, clean: bool, f: &str, qos: QoS) -> Raw {
    let (mut raw, _) = Raw::connect(&s.mqtt, connect_packet(v, id, clean)).await;
    assert_eq!(
        raw.subscribe(1, vec![filter(f, qos)]).await,
        vec![qos as u8]
    );
    raw
}

#[tokio::test]
async fn mqtt_4_3_1_qos0_1_2_flows_and_mqtt_3_3_4_2_qos_is_the_minimum() {
    let s = TestServer::start(|_| {}).await;
    for v in [Version::V4, Version::V5] {
        let mut sub1 = subscriber(&s, v, "s1", true, "q/#", QoS::AtLeastOnce).await;
        let mut sub2 = subscriber(&s, v, "s2", true, "q/#", QoS::ExactlyOnce).await;
        let (mut pubr, _) = Raw::connect(&s.mqtt, connect_packet(v, "p", true)).await;
        // QoS 0: no acknowledgement.
        pubr.send(&Packet::Publish(publish(
            "q/0",
            b"zero",
            QoS::AtMostOnce,
            0,
        )))
        .await;
        // QoS 1: PUBACK with the same packet id [MQTT-4.3.2-2].
        pubr.publish_qos1(publish("q/1", b"one", QoS::AtLeastOnce, 7))
            .await;
        // QoS 2: PUBREC, PUBREL, PUBCOMP [MQTT-4.3.3-8], [MQTT-4.3.3-11].
        pubr.send(&Packet::Publish(publish(
            "q/2",
            b"two",
            QoS::ExactlyOnce,
            8,
        )))
        .await;
        assert!(matches!(pubr.recv().await, Some(Packet::PubRec(a)) if a.pkid == 8));
        pubr.send(&Packet::PubRel(Ack::ok(8))).await;
        assert!(matches!(pubr.recv().await, Some(Packet::PubComp(a)) if a.pkid == 8));
        for (sub, max) in [(&mut sub1, QoS::AtLeastOnce), (&mut sub2, QoS::ExactlyOnce)] {
            let p0 = sub.expect_publish().await;
            assert_eq!((&p0.payload[..], p0.qos), (&b"zero"[..], QoS::AtMostOnce));
            let p1 = sub.expect_publish().await;
            assert_eq!((&p1.payload[..], p1.qos), (&b"one"[..], QoS::AtLeastOnce));
            assert_ne!(p1.pkid, 0, "[MQTT-2.3.1-1]");
            sub.send(&Packet::PubAck(Ack::ok(p1.pkid))).await;
            let p2 = sub.expect_publish().await;
            assert_eq!(&p2.payload[..], b"two");
            assert_eq!(p2.qos, max.min(QoS::ExactlyOnce));
            if p2.qos == QoS::ExactlyOnce {
                sub.send(&Packet::PubRec(Ack::ok(p2.pkid))).await;
                assert!(
                    matches!(sub.recv().await, Some(Packet::PubRel(a)) if a.pkid == p2.pkid),
                    "[MQTT-4.3.3-4]"
                );
                sub.send(&Packet::PubComp(Ack::ok(p2.pkid))).await;
            } else {
                sub.send(&Packet::PubAck(Ack::ok(p2.pkid))).await;
            }
            sub.sync().await;
        }
    }
    s.stop().await;
}

#[tokio::test]
async fn mqtt_4_3_3_9_qos2_redelivered_publish_is_not_forwarded_twice() {
    let s = TestServer::start(|_| {}).await;
    let mut sub = subscriber(&s, Version::V4, "s", true, "x", QoS::AtMostOnce).await;
    let (mut pubr, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "p", true)).await;
    let mut p = publish("x", b"once", QoS::ExactlyOnce, 3);
    pubr.send(&Packet::Publish(p.clone())).await;
    assert!(matches!(pubr.recv().await, Some(Packet::PubRec(_))));
    p.dup = true;
    pubr.send(&Packet::Publish(p)).await;
    assert!(matches!(pubr.recv().await, Some(Packet::PubRec(_))));
    pubr.send(&Packet::PubRel(Ack::ok(3))).await;
    assert!(matches!(pubr.recv().await, Some(Packet::PubComp(_))));
    assert_eq!(&sub.expect_publish().await.payload[..], b"once");
    sub.expect_silence(300).await;
    s.stop().await;
}

#[tokio::test]
async fn mqtt_4_4_0_1_unacknowledged_messages_are_resent_with_dup_after_reconnect() {
    let s = TestServer::start(|_| {}).await;
    for v in [Version::V4, Version::V5] {
        let mut c = connect_packet(v, "redeliver", false);
        c.props.session_expiry = (v == Version::V5).then_some(60);
        let (mut sub, _) = Raw::connect(&s.mqtt, c.clone()).await;
        sub.subscribe(1, vec![filter("r/+", QoS::ExactlyOnce)])
            .await;
        let (mut pubr, _) = Raw::connect(&s.mqtt, connect_packet(v, "rp", true)).await;
        pubr.publish_qos1(publish("r/a", b"a", QoS::AtLeastOnce, 1))
            .await;
        pubr.send(&Packet::Publish(publish("r/b", b"b", QoS::ExactlyOnce, 2)))
            .await;
        assert!(matches!(pubr.recv().await, Some(Packet::PubRec(_))));
        pubr.send(&Packet::PubRel(Ack::ok(2))).await;
        assert!(matches!(pubr.recv().await, Some(Packet::PubComp(_))));
        let a = sub.expect_publish().await;
        let b = sub.expect_publish().await;
        assert!(!a.dup && !b.dup);
        // Receive PUBREC for b (so the server owes PUBREL), never ack a; drop the connection.
        sub.send(&Packet::PubRec(Ack::ok(b.pkid))).await;
        assert!(matches!(sub.recv().await, Some(Packet::PubRel(r)) if r.pkid == b.pkid));
        drop(sub);
        tokio::time::sleep(Duration::from_millis(100)).await;
        c.clean_start = false;
        let (mut sub, ack) = Raw::connect(&s.mqtt, c).await;
        assert!(ack.session_present);
        let again = sub.expect_publish().await;
        assert!(again.dup, "[MQTT-3.3.1-1] DUP on redelivery");
        assert_eq!((again.pkid, &again.payload[..]), (a.pkid, &b"a"[..]));
        assert!(matches!(sub.recv().await, Some(Packet::PubRel(r)) if r.pkid == b.pkid));
        sub.send(&Packet::PubAck(Ack::ok(a.pkid))).await;
        sub.send(&Packet::PubComp(Ack::ok(b.pkid))).await;
        sub.sync().await;
        drop(sub);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut c = connect_packet(v, "redeliver", false);
        c.props.session_expiry = (v == Version::V5).then_some(60);
        let (mut sub, _) = Raw::connect(&s.mqtt, c).await;
        sub.expect_silence(300).await;
        sub.send(&Packet::Disconnect(Disconnect::default())).await;
    }
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_3_4_9_server_respects_the_client_receive_maximum() {
    let s = TestServer::start(|_| {}).await;
    let mut c = connect_packet(Version::V5, "slow", true);
    c.props.receive_maximum = Some(2);
    let (mut sub, _) = Raw::connect(&s.mqtt, c).await;
    sub.subscribe(1, vec![filter("rm", QoS::AtLeastOnce)]).await;
    let (mut pubr, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "p", true)).await;
    for i in 1..=5u16 {
        pubr.publish_qos1(publish("rm", &[i as u8], QoS::AtLeastOnce, i))
            .await;
    }
    let a = sub.expect_publish().await;
    let b = sub.expect_publish().await;
    sub.expect_silence(300).await;
    sub.send(&Packet::PubAck(Ack::ok(a.pkid))).await;
    let c3 = sub.expect_publish().await;
    assert_eq!(c3.payload[0], 3);
    sub.expect_silence(200).await;
    sub.send(&Packet::PubAck(Ack::ok(b.pkid))).await;
    sub.send(&Packet::PubAck(Ack::ok(c3.pkid))).await;
    assert_eq!(sub.expect_publish().await.payload[0], 4);
    assert_eq!(sub.expect_publish().await.payload[0], 5);
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_3_4_7_exceeding_the_server_receive_maximum_is_disconnected_with_0x93() {
    let s = TestServer::start(|c| c.mqtt.receive_maximum = 2).await;
    let (mut raw, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "greedy", true)).await;
    assert_eq!(ack.props.receive_maximum, Some(2));
    for i in 1..=2u16 {
        raw.send(&Packet::Publish(publish("t", b"x", QoS::ExactlyOnce, i)))
            .await;
        assert!(matches!(raw.recv().await, Some(Packet::PubRec(_))));
    }
    raw.send(&Packet::Publish(publish("t", b"x", QoS::ExactlyOnce, 3)))
        .await;
    let got = raw.expect_close().await;
    assert!(
        matches!(got.last(), Some(Packet::Disconnect(d)) if d.reason == 0x93),
        "{got:?}"
    );
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_1_2_25_messages_over_the_client_maximum_packet_size_are_not_sent() {
    let s = TestServer::start(|_| {}).await;
    let mut c = connect_packet(Version::V5, "small", true);
    c.props.maximum_packet_size = Some(64);
    let (mut sub, _) = Raw::connect(&s.mqtt, c).await;
    sub.subscribe(1, vec![filter("m", QoS::AtLeastOnce)]).await;
    let (mut pubr, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "p", true)).await;
    pubr.publish_qos1(publish("m", &[0u8; 200], QoS::AtLeastOnce, 1))
        .await;
    pubr.publish_qos1(publish("m", b"small", QoS::AtLeastOnce, 2))
        .await;
    assert_eq!(&sub.expect_publish().await.payload[..], b"small");
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_2_2_15_oversize_packet_from_the_client_is_disconnected_with_0x95() {
    let s = TestServer::start(|c| c.mqtt.max_packet_size = bytesize::ByteSize::b(1024)).await;
    let (mut raw, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "big", true)).await;
    assert_eq!(ack.props.maximum_packet_size, Some(1024));
    raw.send(&Packet::Publish(publish(
        "t",
        &[0u8; 4096],
        QoS::AtMostOnce,
        0,
    )))
    .await;
    let got = raw.expect_close().await;
    assert!(
        matches!(got.last(), Some(Packet::Disconnect(d)) if d.reason == 0x95),
        "{got:?}"
    );
    // Others are still served.
    let (mut ok, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "fine", true)).await;
    ok.sync().await;
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_3_2_topic_aliases_map_and_invalid_ones_disconnect_with_0x94() {
    let s = TestServer::start(|_| {}).await;
    let mut sub = subscriber(&s, Version::V5, "s", true, "alias/#", QoS::AtMostOnce).await;
    let (mut pubr, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "p", true)).await;
    let max = ack.props.topic_alias_maximum.expect("topic alias maximum");
    let mut p = publish("alias/long/topic", b"1", QoS::AtMostOnce, 0);
    p.props.topic_alias = Some(1);
    pubr.send(&Packet::Publish(p)).await;
    let mut p = publish("", b"2", QoS::AtMostOnce, 0);
    p.props.topic_alias = Some(1);
    pubr.send(&Packet::Publish(p)).await;
    for want in [b"1", b"2"] {
        let got = sub.expect_publish().await;
        assert_eq!(
            (got.topic.as_str(), &got.payload[..]),
            ("alias/long/topic", &want[..])
        );
    }
    let mut p = publish("alias/x", b"3", QoS::AtMostOnce, 0);
    p.props.topic_alias = Some(max + 1);
    pubr.send(&Packet::Publish(p)).await;
    let got = pubr.expect_close().await;
    assert!(
        matches!(got.last(), Some(Packet::Disconnect(d)) if d.reason == 0x94),
        "{got:?}"
    );
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_3_2_2_wildcards_in_a_topic_name_close_the_connection() {
    let s = TestServer::start(|_| {}).await;
    for v in [Version::V4, Version::V5] {
        let (mut raw, _) = Raw::connect(&s.mqtt, connect_packet(v, "w", true)).await;
        raw.send(&Packet::Publish(publish("a/+/b", b"x", QoS::AtMostOnce, 0)))
            .await;
        let got = raw.expect_close().await;
        if v == Version::V5 {
            assert!(
                matches!(got.last(), Some(Packet::Disconnect(d)) if d.reason == 0x90),
                "{got:?}"
            );
        }
    }
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_3_2_5_expired_messages_are_not_delivered_and_3_3_2_6_expiry_counts_down() {
    let s = TestServer::start(|_| {}).await;
    let (mut pubr, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "p", true)).await;
    let mut short = publish("exp/a", b"short", QoS::AtLeastOnce, 1);
    short.retain = true;
    short.props.message_expiry = Some(1);
    pubr.publish_qos1(short).await;
    let mut long = publish("exp/b", b"long", QoS::AtLeastOnce, 2);
    long.retain = true;
    long.props.message_expiry = Some(100);
    pubr.publish_qos1(long).await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let mut sub = subscriber(&s, Version::V5, "s", true, "exp/#", QoS::AtLeastOnce).await;
    let got = sub.expect_publish().await;
    assert_eq!(&got.payload[..], b"long");
    let left = got.props.message_expiry.expect("expiry forwarded");
    assert!((97..100).contains(&left), "remaining expiry {left}");
    sub.send(&Packet::PubAck(Ack::ok(got.pkid))).await;
    sub.expect_silence(300).await;
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_3_2_4_15_16_17_18_20_v5_properties_are_forwarded_unaltered() {
    let s = TestServer::start(|_| {}).await;
    let mut sub = subscriber(&s, Version::V5, "s", true, "props", QoS::AtMostOnce).await;
    let (mut pubr, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "p", true)).await;
    let mut p = publish("props", b"{}", QoS::AtMostOnce, 0);
    p.props = Properties {
        payload_format: Some(1),
        content_type: Some("application/json".into()),
        response_topic: Some("reply/here".into()),
        correlation_data: Some(bytes::Bytes::from_static(&[1, 2, 3])),
        user: vec![
            ("a".into(), "1".into()),
            ("b".into(), "2".into()),
            ("a".into(), "3".into()),
        ],
        ..Properties::default()
    }
    .into();
    pubr.send(&Packet::Publish(p.clone())).await;
    let got = sub.expect_publish().await;
    // [MQTT-3.3.2-4] payload format, [MQTT-3.3.2-17]/[MQTT-3.3.2-18] user properties in order,
    // [MQTT-3.3.2-20] content type, response topic and correlation data unaltered.
    assert_eq!(got.props.payload_format, Some(1));
    assert_eq!(got.props.content_type, p.props.content_type);
    assert_eq!(got.props.response_topic, p.props.response_topic);
    assert_eq!(got.props.correlation_data, p.props.correlation_data);
    assert_eq!(got.props.user, p.props.user);
    s.stop().await;
}
