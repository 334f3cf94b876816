//! Retained messages and wills, the rules the other suites leave implicit:
//! RETAIN 0 leaves the retained message alone, QoS 0 is retained too, no
//! will without the flag, a non-retained will is not retained, will user
//! properties keep their order.

mod common;

use std::time::Duration;

use common::*;
use fogline_mqtt::codec::{Properties, Version};

#[tokio::test]
async fn mqtt_3_3_1_8_v5_and_3_3_1_12_v311_retain_0_leaves_the_retained_message_and_3_3_1_7_v311_qos0_is_retained(
) {
    let s = TestServer::start(|_| {}).await;
    for (v, topic) in [(Version::V4, "rw/4"), (Version::V5, "rw/5")] {
        let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(v, "rw-p", true)).await;
        let mut keep = publish(topic, b"keep", QoS::AtMostOnce, 0);
        keep.retain = true;
        p.send(&fogline_mqtt::codec::Packet::Publish(keep)).await;
        p.send(&fogline_mqtt::codec::Packet::Publish(publish(
            topic,
            b"live",
            QoS::AtMostOnce,
            0,
        )))
        .await;
        p.sync().await;
        let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(v, "rw-s", true)).await;
        sub.subscribe(1, vec![filter(topic, QoS::AtMostOnce)]).await;
        let got = sub.expect_publish().await;
        assert_eq!(
            (&got.payload[..], got.retain),
            (&b"keep"[..], true),
            "{v:?}"
        );
        sub.expect_silence(200).await;
    }
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_1_2_12_v311_no_will_without_the_flag_and_3_1_2_16_a_will_without_retain_is_not_retained(
) {
    let s = TestServer::start(|_| {}).await;
    let (mut watcher, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "ww", true)).await;
    watcher
        .subscribe(1, vec![filter("wills2/#", QoS::AtMostOnce)])
        .await;
    let (plain, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "plain", true)).await;
    drop(plain);
    watcher.expect_silence(300).await;
    let mut c = connect_packet(Version::V4, "willing", true);
    c.will = Some(Will {
        topic: "wills2/x".into(),
        payload: bytes::Bytes::from_static(b"bye"),
        qos: QoS::AtMostOnce,
        retain: false,
        props: Default::default(),
    });
    let (dying, _) = Raw::connect(&s.mqtt, c).await;
    drop(dying);
    let got = watcher.expect_publish().await;
    assert_eq!((&got.payload[..], got.retain), (&b"bye"[..], false));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (mut late, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "late2", true)).await;
    late.subscribe(1, vec![filter("wills2/#", QoS::AtMostOnce)])
        .await;
    late.expect_silence(300).await;
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_1_3_10_will_user_properties_keep_their_order() {
    let s = TestServer::start(|_| {}).await;
    let (mut watcher, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "wu", true)).await;
    watcher
        .subscribe(1, vec![filter("wills3/#", QoS::AtMostOnce)])
        .await;
    let user = vec![
        ("a".into(), "1".into()),
        ("b".into(), "2".into()),
        ("a".into(), "3".into()),
    ];
    let mut c = connect_packet(Version::V5, "wup", true);
    c.will = Some(Will {
        topic: "wills3/x".into(),
        payload: bytes::Bytes::from_static(b"bye"),
        qos: QoS::AtMostOnce,
        retain: false,
        props: Properties {
            user: user.clone(),
            content_type: Some("text/plain".into()),
            ..Properties::default()
        }
        .into(),
    });
    let (dying, _) = Raw::connect(&s.mqtt, c).await;
    drop(dying);
    let got = watcher.expect_publish().await;
    assert_eq!(got.props.user, user);
    assert_eq!(got.props.content_type.as_deref(), Some("text/plain"));
    s.stop().await;
}

/// 5.0: only DISCONNECT 0x00 deletes the will; 0x04 and an error reason
/// (here 0x80) publish it.
#[tokio::test]
async fn mqtt_3_1_2_8_and_3_14_4_3_only_a_normal_disconnect_deletes_the_will() {
    let s = TestServer::start(|_| {}).await;
    let (mut watcher, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "wd", true)).await;
    watcher
        .subscribe(1, vec![filter("wills4/#", QoS::AtMostOnce)])
        .await;
    for (reason, published) in [(0x00, false), (0x04, true), (0x80, true)] {
        let mut c = connect_packet(Version::V5, "wdp", true);
        c.will = Some(Will {
            topic: "wills4/x".into(),
            payload: bytes::Bytes::from_static(b"bye"),
            qos: QoS::AtMostOnce,
            retain: false,
            props: Default::default(),
        });
        let (mut client, _) = Raw::connect(&s.mqtt, c).await;
        client
            .send(&fogline_mqtt::codec::Packet::Disconnect(Disconnect {
                reason,
                props: Default::default(),
            }))
            .await;
        if published {
            assert_eq!(
                &watcher.expect_publish().await.payload[..],
                b"bye",
                "{reason:#x}"
            );
        } else {
            watcher.expect_silence(300).await;
        }
    }
    s.stop().await;
}
