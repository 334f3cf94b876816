//! What the server puts in the packets it sends (MQTT 5): nothing the
//! client did not ask for and nothing a rule forbids: no topic aliases, no
//! response information, no authentication data, no properties on acks.

mod common;

use common::*;
use fogline_mqtt::codec::{Packet, Properties, Version};

/// CONNACK, PUBLISH, SUBACK and UNSUBACK to a client that offers topic
/// aliases and asks for response information and no problem information.
#[tokio::test]
async fn mqtt_3_1_2_26_27_28_and_4_12_0_6_the_server_sends_no_alias_response_information_or_auth() {
    let s = TestServer::start(|_| {}).await;
    let mut c = connect_packet(Version::V5, "asks", true);
    c.props.topic_alias_maximum = Some(10);
    c.props.request_response_info = Some(1);
    c.props.request_problem_info = Some(0);
    let (mut sub, ack) = Raw::connect(&s.mqtt, c).await;
    assert_eq!(ack.props.response_info, None, "[MQTT-3.1.2-28]");
    assert!(ack.props.user.is_empty(), "[MQTT-3.2.2-20]");
    assert_eq!(
        (&ack.props.auth_method, &ack.props.auth_data),
        (&None, &None),
        "[MQTT-4.12.0-6]"
    );
    sub.send(&Packet::Subscribe(Subscribe {
        pkid: 1,
        props: Default::default(),
        filters: vec![filter("a/rather/long/topic/name", QoS::AtMostOnce)],
    }))
    .await;
    match sub.recv().await {
        Some(Packet::SubAck(a)) => assert_eq!(a.props, Properties::default(), "[MQTT-3.9.2-1]"),
        other => panic!("expected SUBACK, got {other:?}"),
    }
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "ap", true)).await;
    for i in 0..3u8 {
        p.send(&Packet::Publish(publish(
            "a/rather/long/topic/name",
            &[i],
            QoS::AtMostOnce,
            0,
        )))
        .await;
    }
    for i in 0..3u8 {
        let got = sub.expect_publish().await;
        assert_eq!(got.payload[0], i);
        assert_eq!(got.topic.as_str(), "a/rather/long/topic/name");
        assert_eq!(got.props.topic_alias, None, "[MQTT-3.3.2-11]");
        assert!(!got.dup, "[MQTT-3.3.1-2] DUP 0 on QoS 0");
    }
    sub.send(&Packet::Unsubscribe(Unsubscribe {
        pkid: 2,
        props: Default::default(),
        filters: vec!["a/rather/long/topic/name".into()],
    }))
    .await;
    match sub.recv().await {
        Some(Packet::UnsubAck(a)) => {
            assert_eq!(a.props, Properties::default(), "[MQTT-3.11.2-1]")
        }
        other => panic!("expected UNSUBACK, got {other:?}"),
    }
    s.stop().await;
}

/// PUBACK, PUBREC, PUBREL and PUBCOMP from the server carry a reason code
/// only, also when they refuse; a server DISCONNECT has no Session Expiry
/// and no User Property.
#[tokio::test]
async fn mqtt_3_1_2_29_3_4_2_2_to_3_7_2_3_and_3_14_2_2_acks_and_disconnect_carry_no_extra_properties(
) {
    let s = TestServer::start(|c| c.broker.max_message_bytes = bytesize::ByteSize::kib(1)).await;
    let mut c = connect_packet(Version::V5, "quiet", true);
    c.props.request_problem_info = Some(0);
    let (mut raw, _) = Raw::connect(&s.mqtt, c).await;
    let big = vec![1u8; 4096];
    raw.send(&Packet::Publish(publish("q", &big, QoS::AtLeastOnce, 1)))
        .await;
    match raw.recv().await {
        Some(Packet::PubAck(a)) => assert_eq!((a.reason, a.props), (0x97, Default::default())),
        other => panic!("expected PUBACK, got {other:?}"),
    }
    raw.send(&Packet::Publish(publish("q", &big, QoS::ExactlyOnce, 2)))
        .await;
    match raw.recv().await {
        Some(Packet::PubRec(a)) => assert_eq!((a.reason, a.props), (0x97, Default::default())),
        other => panic!("expected PUBREC, got {other:?}"),
    }
    // Acknowledgements of unknown packet ids: 0x92, no properties.
    raw.send(&Packet::PubRel(Ack::ok(77))).await;
    match raw.recv().await {
        Some(Packet::PubComp(a)) => assert_eq!((a.reason, a.props), (0x92, Default::default())),
        other => panic!("expected PUBCOMP, got {other:?}"),
    }
    raw.send(&Packet::PubRec(Ack::ok(78))).await;
    match raw.recv().await {
        Some(Packet::PubRel(a)) => assert_eq!((a.reason, a.props), (0x92, Default::default())),
        other => panic!("expected PUBREL, got {other:?}"),
    }
    let mut p = publish("q", b"x", QoS::AtMostOnce, 0);
    p.props.topic_alias = Some(0);
    raw.send(&Packet::Publish(p)).await;
    let got = raw.expect_close().await;
    match got.last() {
        Some(Packet::Disconnect(d)) => {
            assert_eq!(d.reason, 0x94);
            assert_eq!(d.props.session_expiry, None, "[MQTT-3.14.2-2]");
            assert!(d.props.user.is_empty(), "[MQTT-3.14.2-4]");
        }
        other => panic!("expected DISCONNECT, got {other:?}"),
    }
    s.stop().await;
}

/// Topic aliases belong to one network connection.
#[tokio::test]
async fn mqtt_3_3_2_7_topic_aliases_do_not_outlive_the_connection() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "al-s", true)).await;
    sub.subscribe(1, vec![filter("al/#", QoS::AtMostOnce)])
        .await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "al-p", false)).await;
    let mut m = publish("al/x", b"1", QoS::AtMostOnce, 0);
    m.props.topic_alias = Some(3);
    p.send(&Packet::Publish(m)).await;
    assert_eq!(sub.expect_publish().await.topic.as_str(), "al/x");
    drop(p);
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "al-p", false)).await;
    let mut m = publish("", b"2", QoS::AtMostOnce, 0);
    m.props.topic_alias = Some(3);
    p.send(&Packet::Publish(m)).await;
    let got = p.expect_close().await;
    assert!(
        matches!(got.last(), Some(Packet::Disconnect(d)) if d.reason == 0x82),
        "{got:?}"
    );
    sub.expect_silence(300).await;
    s.stop().await;
}
