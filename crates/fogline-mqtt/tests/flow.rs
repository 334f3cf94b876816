//! Acknowledgement flows and flow control seen from the server side:
//! packet identifiers reused after a flow ends, refused deliveries, the
//! send quota, deliveries in flight across UNSUBSCRIBE and expiry.

mod common;

use std::time::Duration;

use common::*;
use fogline_mqtt::codec::{Packet, Version};

fn persistent(id: &str) -> fogline_mqtt::codec::Connect {
    let mut c = connect_packet(Version::V5, id, false);
    c.props.session_expiry = Some(300);
    c
}

/// After PUBACK / PUBCOMP the same packet id is a new message, DUP or not.
#[tokio::test]
async fn mqtt_4_3_2_5_and_4_3_3_12_a_packet_id_is_new_again_after_its_flow_ends() {
    let s = TestServer::start(|_| {}).await;
    for v in [Version::V4, Version::V5] {
        let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(v, "reuse-s", true)).await;
        sub.subscribe(1, vec![filter("reuse", QoS::AtMostOnce)])
            .await;
        let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(v, "reuse-p", true)).await;
        p.publish_qos1(publish("reuse", b"a", QoS::AtLeastOnce, 5))
            .await;
        let mut again = publish("reuse", b"b", QoS::AtLeastOnce, 5);
        again.dup = true;
        p.publish_qos1(again).await;
        for payload in [b"c", b"d"] {
            p.send(&Packet::Publish(publish(
                "reuse",
                payload,
                QoS::ExactlyOnce,
                9,
            )))
            .await;
            assert!(matches!(p.recv().await, Some(Packet::PubRec(a)) if a.pkid == 9));
            p.send(&Packet::PubRel(Ack::ok(9))).await;
            assert!(matches!(p.recv().await, Some(Packet::PubComp(a)) if a.pkid == 9));
        }
        for want in [b"a", b"b", b"c", b"d"] {
            let got = sub.expect_publish().await;
            assert_eq!(&got.payload[..], want, "{v:?}");
            assert!(!got.dup, "[MQTT-3.3.1-3] DUP is not forwarded");
        }
        sub.expect_silence(200).await;
    }
    s.stop().await;
}

/// PUBACK or PUBREC with a reason code of 0x80 or more ends the delivery:
/// no PUBREL, no resend after a reconnect; an unanswered one is resent.
#[tokio::test]
async fn mqtt_4_4_0_2_and_4_8_2_6_a_refused_delivery_is_not_resent() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, persistent("refuser")).await;
    sub.subscribe(1, vec![filter("refuse", QoS::ExactlyOnce)])
        .await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "rp", true)).await;
    p.publish_qos1(publish("refuse", b"q1", QoS::AtLeastOnce, 1))
        .await;
    let m = sub.expect_publish().await;
    let mut no = Ack::ok(m.pkid);
    no.reason = 0x80;
    sub.send(&Packet::PubAck(no.clone())).await;
    p.send(&Packet::Publish(publish(
        "refuse",
        b"q2",
        QoS::ExactlyOnce,
        2,
    )))
    .await;
    assert!(matches!(p.recv().await, Some(Packet::PubRec(a)) if a.pkid == 2));
    let m = sub.expect_publish().await;
    assert_eq!(&m.payload[..], b"q2");
    no.pkid = m.pkid;
    sub.send(&Packet::PubRec(no)).await;
    sub.expect_silence(300).await; // no PUBREL for a refused PUBREC
    p.publish_qos1(publish("refuse", b"kept", QoS::AtLeastOnce, 3))
        .await;
    assert_eq!(&sub.expect_publish().await.payload[..], b"kept");
    drop(sub);
    let (mut sub, ack) = Raw::connect(&s.mqtt, persistent("refuser")).await;
    assert!(ack.session_present);
    let again = sub.expect_publish().await;
    assert_eq!((&again.payload[..], again.dup), (&b"kept"[..], true));
    sub.expect_silence(300).await;
    s.stop().await;
}

/// With the client's send quota at zero, PINGRESP, PUBACK and SUBACK still
/// flow; only QoS>0 PUBLISH waits.
#[tokio::test]
async fn mqtt_3_3_4_10_and_4_9_0_3_other_packets_flow_while_the_send_quota_is_zero() {
    let s = TestServer::start(|_| {}).await;
    let mut c = connect_packet(Version::V5, "quota", true);
    c.props.receive_maximum = Some(1);
    let (mut sub, _) = Raw::connect(&s.mqtt, c).await;
    sub.subscribe(1, vec![filter("quota", QoS::AtLeastOnce)])
        .await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "qp", true)).await;
    for i in 1..=2u16 {
        p.publish_qos1(publish("quota", &[i as u8], QoS::AtLeastOnce, i))
            .await;
    }
    let first = sub.expect_publish().await;
    sub.sync().await; // PINGRESP comes although the window is full
    sub.publish_qos1(publish("elsewhere", b"x", QoS::AtLeastOnce, 40))
        .await;
    assert_eq!(
        sub.subscribe(41, vec![filter("other", QoS::AtMostOnce)])
            .await,
        vec![0]
    );
    sub.send(&Packet::PubAck(Ack::ok(first.pkid))).await;
    assert_eq!(sub.expect_publish().await.payload[0], 2);
    s.stop().await;
}

/// UNSUBSCRIBE stops new messages but a QoS 1 delivery already started is
/// completed, here across a reconnect.
#[tokio::test]
async fn mqtt_3_10_4_3_unsubscribe_completes_deliveries_already_started() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, persistent("unsub-inflight")).await;
    sub.subscribe(1, vec![filter("ui", QoS::AtLeastOnce)]).await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "uip", true)).await;
    p.publish_qos1(publish("ui", b"started", QoS::AtLeastOnce, 1))
        .await;
    let m = sub.expect_publish().await;
    sub.send(&Packet::Unsubscribe(Unsubscribe {
        pkid: 2,
        props: Default::default(),
        filters: vec!["ui".into()],
    }))
    .await;
    assert!(matches!(sub.recv().await, Some(Packet::UnsubAck(a)) if a.pkid == 2));
    p.publish_qos1(publish("ui", b"after", QoS::AtLeastOnce, 2))
        .await;
    drop(sub);
    let (mut sub, ack) = Raw::connect(&s.mqtt, persistent("unsub-inflight")).await;
    assert!(ack.session_present);
    let again = sub.expect_publish().await;
    assert_eq!(
        (&again.payload[..], again.pkid, again.dup),
        (&b"started"[..], m.pkid, true)
    );
    sub.send(&Packet::PubAck(Ack::ok(again.pkid))).await;
    sub.expect_silence(300).await; // "after" was never added [MQTT-3.10.4-2]
    s.stop().await;
}

/// A QoS 2 message already sent is not expired: it is resent after its
/// Message Expiry Interval has passed [MQTT-4.3.3-7], and its flow completes.
#[tokio::test]
async fn mqtt_4_3_3_7_a_sent_qos2_message_is_not_expired() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, persistent("exp2")).await;
    sub.subscribe(1, vec![filter("exp2", QoS::ExactlyOnce)])
        .await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "exp2p", true)).await;
    let mut m = publish("exp2", b"short-lived", QoS::ExactlyOnce, 1);
    m.props.message_expiry = Some(1);
    p.send(&Packet::Publish(m)).await;
    assert!(matches!(p.recv().await, Some(Packet::PubRec(_))));
    let first = sub.expect_publish().await;
    drop(sub);
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, persistent("exp2")).await;
    let again = sub.expect_publish().await;
    assert_eq!(
        (&again.payload[..], again.pkid, again.dup),
        (&b"short-lived"[..], first.pkid, true)
    );
    sub.send(&Packet::PubRec(Ack::ok(again.pkid))).await;
    assert!(matches!(sub.recv().await, Some(Packet::PubRel(a)) if a.pkid == first.pkid));
    sub.send(&Packet::PubComp(Ack::ok(first.pkid))).await;
    sub.expect_silence(200).await;
    s.stop().await;
}

/// A client that reconnects with a smaller Receive Maximum gets at most that many
/// redelivered PUBLISHes at once [MQTT-4.9.0-2]; the rest follow in order as it acks, each
/// with DUP and its original packet id [MQTT-4.4.0-1]. One larger than its new Maximum
/// Packet Size is dropped [MQTT-3.1.2-25].
#[tokio::test]
async fn mqtt_4_9_0_2_redelivery_after_reconnect_keeps_the_new_receive_maximum() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, persistent("rm-sub")).await;
    sub.subscribe(1, vec![filter("rm/t", QoS::AtLeastOnce)])
        .await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "rm-pub", true)).await;
    let big = vec![b'x'; 500];
    let bodies: [&[u8]; 4] = [&big, b"m1", b"m2", b"m3"];
    for (i, b) in bodies.iter().enumerate() {
        p.publish_qos1(publish("rm/t", b, QoS::AtLeastOnce, i as u16 + 1))
            .await;
    }
    let mut first_ids = Vec::new();
    for b in bodies {
        let m = sub.expect_publish().await; // never acked
        assert_eq!(&m.payload[..], b);
        first_ids.push(m.pkid);
    }
    drop(sub);
    let mut c = persistent("rm-sub");
    c.props.receive_maximum = Some(1);
    c.props.maximum_packet_size = Some(200);
    let (mut again, ack) = Raw::connect(&s.mqtt, c).await;
    assert!(ack.session_present);
    let mut got = Vec::new();
    loop {
        let m = match again.recv_within(Duration::from_millis(300)).await {
            Ok(Some(Packet::Publish(m))) => m,
            Err(()) => break,
            other => panic!("expected PUBLISH, got {other:?}"),
        };
        again.expect_silence(100).await; // one at a time
        got.push((m.payload.to_vec(), m.pkid, m.dup));
        again.send(&Packet::PubAck(Ack::ok(m.pkid))).await;
    }
    let want: Vec<_> = (1..4)
        .map(|i| (bodies[i].to_vec(), first_ids[i], true))
        .collect();
    assert_eq!(got, want);
    s.stop().await;
}
