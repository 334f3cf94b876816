//! Shared subscriptions across reconnects and refusals, and the QoS 2
//! receiver finishing a flow whose message has expired.

mod common;

use std::time::Duration;

use common::*;
use fogline_mqtt::codec::{Packet, Version};

fn member(id: &str) -> fogline_mqtt::codec::Connect {
    let mut c = connect_packet(Version::V5, id, false);
    c.props.session_expiry = Some(300);
    c
}

/// A shared message in flight stays with the member it was sent to and is
/// resent when that member reconnects; a refused one goes to nobody else.
#[tokio::test]
async fn mqtt_4_8_2_4_and_4_8_2_6_a_shared_delivery_stays_with_its_member() {
    let s = TestServer::start(|_| {}).await;
    let share = "$share/grp/sh";
    let (mut m1, _) = Raw::connect(&s.mqtt, member("sh-1")).await;
    m1.subscribe(1, vec![filter(share, QoS::AtLeastOnce)]).await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "sh-p", true)).await;
    p.publish_qos1(publish("sh", b"a", QoS::AtLeastOnce, 1))
        .await;
    let first = m1.expect_publish().await;
    drop(m1);
    let (mut m2, _) = Raw::connect(&s.mqtt, member("sh-2")).await;
    m2.subscribe(1, vec![filter(share, QoS::AtLeastOnce)]).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (mut m1, ack) = Raw::connect(&s.mqtt, member("sh-1")).await;
    assert!(ack.session_present);
    let again = m1.expect_publish().await;
    assert_eq!(
        (&again.payload[..], again.pkid, again.dup),
        (&b"a"[..], first.pkid, true),
        "[MQTT-4.8.2-4]"
    );
    m1.send(&Packet::PubAck(Ack::ok(again.pkid))).await;
    m2.expect_silence(200).await;
    // Whoever gets the next one refuses it: nobody else receives it [MQTT-4.8.2-6].
    p.publish_qos1(publish("sh", b"b", QoS::AtLeastOnce, 2))
        .await;
    let mut refused = 0;
    for m in [&mut m1, &mut m2] {
        if let Ok(Some(Packet::Publish(got))) = m.recv_within(Duration::from_millis(500)).await {
            assert_eq!(&got.payload[..], b"b");
            let mut no = Ack::ok(got.pkid);
            no.reason = 0x80;
            m.send(&Packet::PubAck(no)).await;
            refused += 1;
        }
    }
    assert_eq!(refused, 1);
    m1.expect_silence(300).await;
    m2.expect_silence(100).await;
    s.stop().await;
}

/// The server as QoS 2 receiver completes the flow after the message's
/// expiry has passed: PUBREL is answered with PUBCOMP 0x00.
#[tokio::test]
async fn mqtt_4_3_3_13_the_qos2_flow_completes_after_the_message_expired() {
    let s = TestServer::start(|_| {}).await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "late-rel", true)).await;
    let mut m = publish("lr", b"x", QoS::ExactlyOnce, 4);
    m.props.message_expiry = Some(1);
    p.send(&Packet::Publish(m)).await;
    assert!(matches!(p.recv().await, Some(Packet::PubRec(a)) if a.pkid == 4 && a.reason == 0));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    p.send(&Packet::PubRel(Ack::ok(4))).await;
    assert!(matches!(p.recv().await, Some(Packet::PubComp(a)) if a.pkid == 4 && a.reason == 0));
    s.stop().await;
}

/// Empty topic names and filters are refused [MQTT-4.7.3-1].
#[tokio::test]
async fn mqtt_4_7_3_1_topic_names_and_filters_are_at_least_one_character() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "empty-f", true)).await;
    assert_eq!(
        sub.subscribe(
            1,
            vec![filter("", QoS::AtMostOnce), filter("ok", QoS::AtMostOnce)]
        )
        .await,
        vec![0x8F, 0]
    );
    for v in [Version::V4, Version::V5] {
        let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(v, "empty-t", true)).await;
        p.send(&Packet::Publish(publish("", b"x", QoS::AtMostOnce, 0)))
            .await;
        let got = p.expect_close().await;
        if v == Version::V5 {
            assert!(
                matches!(got.last(), Some(Packet::Disconnect(d)) if d.reason >= 0x80),
                "{got:?}"
            );
        }
    }
    s.stop().await;
}

/// A shared message whose member's session ends before it reconnects is
/// not sent to another member.
#[tokio::test]
async fn mqtt_4_8_2_5_a_shared_message_dies_with_its_members_session() {
    let s = TestServer::start(|_| {}).await;
    let share = "$share/grp2/sd";
    let mut short = connect_packet(Version::V5, "sd-1", true);
    short.props.session_expiry = Some(1);
    let (mut m1, _) = Raw::connect(&s.mqtt, short).await;
    m1.subscribe(1, vec![filter(share, QoS::AtLeastOnce)]).await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "sd-p", true)).await;
    p.publish_qos1(publish("sd", b"orphan", QoS::AtLeastOnce, 1))
        .await;
    assert_eq!(&m1.expect_publish().await.payload[..], b"orphan");
    let (mut m2, _) = Raw::connect(&s.mqtt, member("sd-2")).await;
    m2.subscribe(1, vec![filter(share, QoS::AtLeastOnce)]).await;
    drop(m1);
    m2.expect_silence(2000).await; // the session of sd-1 expires meanwhile
                                   // The group still delivers to m2: the silence was not a dead subscription.
    p.publish_qos1(publish("sd", b"next", QoS::AtLeastOnce, 2))
        .await;
    assert_eq!(&m2.expect_publish().await.payload[..], b"next");
    s.stop().await;
}
