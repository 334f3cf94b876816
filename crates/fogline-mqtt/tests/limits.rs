//! Reason codes and limits: what the server says when it refuses, and that
//! what it says fits the client's limits.

mod common;

use std::time::Duration;

use bytes::BytesMut;
use common::*;
use fogline_mqtt::codec::{self, Packet, Properties, Version};

fn encoded_len(p: &Packet, v: Version) -> usize {
    let mut b = BytesMut::new();
    codec::encode(p, v, &mut b).expect("encode");
    b.len()
}

/// A reason string that would take a CONNACK or DISCONNECT past the
/// client's Maximum Packet Size is left out; the reason code stays.
#[tokio::test]
async fn mqtt_3_2_2_19_and_3_14_2_3_reason_strings_stay_within_the_client_maximum_packet_size() {
    let s = TestServer::start(|_| {}).await;
    const MAX: u32 = 24;
    // CONNACK refusal (enhanced authentication is not offered).
    let mut c = connect_packet(Version::V5, "tiny-auth", true);
    c.props.maximum_packet_size = Some(MAX);
    c.props.auth_method = Some("SCRAM-SHA-1".into());
    let (raw, ack) = Raw::connect(&s.mqtt, c).await;
    assert_eq!(ack.code, 0x8C);
    assert!(encoded_len(&Packet::ConnAck(ack), Version::V5) <= MAX as usize);
    drop(raw);
    // Server DISCONNECT (topic alias 0 is out of range).
    let mut c = connect_packet(Version::V5, "tiny", true);
    c.props.maximum_packet_size = Some(MAX);
    let (mut raw, _) = Raw::connect(&s.mqtt, c).await;
    let mut p = publish("t", b"x", QoS::AtMostOnce, 0);
    p.props.topic_alias = Some(0);
    raw.send(&Packet::Publish(p)).await;
    let got = raw.expect_close().await;
    match got.last() {
        Some(d @ Packet::Disconnect(inner)) => {
            assert_eq!(inner.reason, 0x94);
            assert!(encoded_len(d, Version::V5) <= MAX as usize, "{d:?}");
        }
        other => panic!("expected DISCONNECT 0x94, got {other:?}"),
    }
    // With room for it, the reason string is sent.
    let (mut raw, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "roomy", true)).await;
    let mut p = publish("t", b"x", QoS::AtMostOnce, 0);
    p.props.topic_alias = Some(0);
    raw.send(&Packet::Publish(p)).await;
    let got = raw.expect_close().await;
    assert!(
        matches!(got.last(), Some(Packet::Disconnect(d)) if d.props.reason_string.is_some()),
        "{got:?}"
    );
    s.stop().await;
}

/// A message over the broker's size limit is refused with a code from the
/// PUBACK / PUBREC sets (0x97 quota exceeded), and the connection goes on.
#[tokio::test]
async fn mqtt_3_4_2_1_and_3_5_2_1_refusals_use_puback_and_pubrec_reason_codes() {
    let s = TestServer::start(|c| c.broker.max_message_bytes = bytesize::ByteSize::kib(1)).await;
    const PUBACK_CODES: [u8; 9] = [0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99];
    let (mut raw, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "big", true)).await;
    let big = vec![7u8; 4096];
    raw.send(&Packet::Publish(publish("big", &big, QoS::AtLeastOnce, 1)))
        .await;
    match raw.recv().await {
        Some(Packet::PubAck(a)) => {
            assert!(
                a.reason >= 0x80 && PUBACK_CODES.contains(&a.reason),
                "{a:?}"
            )
        }
        other => panic!("expected PUBACK, got {other:?}"),
    }
    raw.send(&Packet::Publish(publish("big", &big, QoS::ExactlyOnce, 2)))
        .await;
    match raw.recv().await {
        Some(Packet::PubRec(a)) => {
            assert!(
                a.reason >= 0x80 && PUBACK_CODES.contains(&a.reason),
                "{a:?}"
            )
        }
        other => panic!("expected PUBREC, got {other:?}"),
    }
    // A refused QoS 2 id is free again [MQTT-4.3.3-9].
    raw.send(&Packet::Publish(publish("big", b"ok", QoS::ExactlyOnce, 2)))
        .await;
    assert!(matches!(raw.recv().await, Some(Packet::PubRec(a)) if a.reason == 0));
    s.stop().await;
}

/// An assigned client identifier is never one a session already uses,
/// even when a client picked a name of the server's pattern.
#[tokio::test]
async fn mqtt_3_2_2_16_an_assigned_client_id_is_not_used_by_any_other_session() {
    let s = TestServer::start(|_| {}).await;
    let anon = || {
        let mut c = connect_packet(Version::V5, "", true);
        c.props.session_expiry = Some(300);
        c
    };
    let (_first, ack) = Raw::connect(&s.mqtt, anon()).await;
    let id = ack
        .props
        .assigned_client_id
        .clone()
        .expect("an assigned id");
    let n: u64 = id
        .strip_prefix("fogline-")
        .and_then(|n| n.parse().ok())
        .expect("fogline-N");
    let mut taken = vec![id.to_string()];
    let mut holders = Vec::new();
    for k in n + 1..=n + 20 {
        let name = format!("fogline-{k}");
        let mut c = connect_packet(Version::V5, &name, true);
        c.props.session_expiry = Some(300);
        holders.push(Raw::connect(&s.mqtt, c).await.0);
        taken.push(name);
    }
    let (_second, ack) = Raw::connect(&s.mqtt, anon()).await;
    let id = ack
        .props
        .assigned_client_id
        .clone()
        .expect("an assigned id");
    assert!(!taken.contains(&id.to_string()), "{id} is in use");
    // The holders were not taken over.
    for h in &mut holders {
        h.sync().await;
    }
    s.stop().await;
}

/// 3.1.1: a will topic with a wildcard makes the CONNECT invalid: the
/// connection closes without CONNACK. 5.0 answers CONNACK 0x90.
#[tokio::test]
async fn mqtt_3_1_4_1_an_invalid_will_topic_closes_v311_without_connack() {
    let s = TestServer::start(|_| {}).await;
    for v in [Version::V4, Version::V5] {
        let mut c = connect_packet(v, "bad-will", true);
        c.will = Some(Will {
            topic: "wills/+".into(),
            payload: bytes::Bytes::from_static(b"x"),
            qos: QoS::AtMostOnce,
            retain: false,
            props: Default::default(),
        });
        let mut raw = Raw::open(&s.mqtt, v).await;
        raw.send(&Packet::Connect(Box::new(c))).await;
        let got = raw.expect_close().await;
        match v {
            Version::V4 => assert!(got.is_empty(), "{got:?}"),
            Version::V5 => assert!(
                matches!(got.as_slice(), [Packet::ConnAck(a)] if a.code == 0x90 && !a.session_present),
                "{got:?}"
            ),
        }
    }
    s.stop().await;
}

/// No Local on a shared subscription is a protocol error (DISCONNECT 0x82).
#[tokio::test]
async fn mqtt_3_8_3_4_no_local_on_a_shared_subscription_is_a_protocol_error() {
    let s = TestServer::start(|_| {}).await;
    let (mut raw, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "nl", true)).await;
    let mut f = filter("$share/g/nl", QoS::AtMostOnce);
    f.no_local = true;
    raw.send(&Packet::Subscribe(Subscribe {
        pkid: 1,
        props: Default::default(),
        filters: vec![f],
    }))
    .await;
    let got = raw.expect_close().await;
    assert!(
        matches!(got.last(), Some(Packet::Disconnect(d)) if d.reason == 0x82),
        "{got:?}"
    );
    s.stop().await;
}

/// The filters of a SUBSCRIBE before one that is a protocol error were applied, so a
/// persistent session keeps them across a restart too.
#[tokio::test]
async fn filters_applied_before_a_subscribe_error_survive_a_restart() {
    let s = TestServer::start_in(tempfile::tempdir().expect("tempdir"), |_| {}).await;
    let mut c = connect_packet(Version::V5, "half", true);
    c.props.session_expiry = Some(600);
    let (mut raw, _) = Raw::connect(&s.mqtt, c).await;
    let mut bad = filter("$share/g/x", QoS::AtLeastOnce);
    bad.no_local = true;
    raw.send(&Packet::Subscribe(Subscribe {
        pkid: 1,
        props: Default::default(),
        filters: vec![filter("kept/1", QoS::AtLeastOnce), bad],
    }))
    .await;
    let got = raw.expect_close().await;
    assert!(
        matches!(got.last(), Some(Packet::Disconnect(d)) if d.reason == 0x82),
        "{got:?}"
    );
    let dir = s.stop().await;
    let s = TestServer::start_in(dir, |_| {}).await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "p", true)).await;
    p.publish_qos1(publish("kept/1", b"queued", QoS::AtLeastOnce, 1))
        .await;
    let (mut raw, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "half", false)).await;
    assert!(ack.session_present);
    let m = raw.expect_publish().await;
    assert_eq!(&m.payload[..], b"queued");
    s.stop().await;
}

/// A Response Topic with wildcards (in a PUBLISH or a will) is refused, so
/// the server never forwards one.
#[tokio::test]
async fn mqtt_3_3_2_14_a_response_topic_with_wildcards_is_refused() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "rt-s", true)).await;
    sub.subscribe(1, vec![filter("rt/#", QoS::AtMostOnce)])
        .await;
    let (mut raw, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "rt-p", true)).await;
    let mut p = publish("rt/q", b"?", QoS::AtMostOnce, 0);
    p.props.response_topic = Some("rt/replies/+".into());
    raw.send(&Packet::Publish(p)).await;
    let got = raw.expect_close().await;
    assert!(
        matches!(got.last(), Some(Packet::Disconnect(d)) if d.reason == 0x82),
        "{got:?}"
    );
    let mut c = connect_packet(Version::V5, "rt-w", true);
    c.will = Some(Will {
        topic: "rt/will".into(),
        payload: bytes::Bytes::from_static(b"x"),
        qos: QoS::AtMostOnce,
        retain: false,
        props: Properties {
            response_topic: Some("rt/#".into()),
            ..Properties::default()
        }
        .into(),
    });
    let (_raw, ack) = Raw::connect(&s.mqtt, c).await;
    assert_eq!(ack.code, 0x82);
    sub.expect_silence(300).await;
    s.stop().await;
}

/// A retained message the broker refuses (over its size limit) does not replace the retained
/// one: a later subscriber gets the last accepted message, whatever the QoS.
#[tokio::test]
async fn a_refused_retained_message_is_not_retained() {
    let s = TestServer::start(|c| c.broker.max_message_bytes = bytesize::ByteSize::kib(1)).await;
    let (mut raw, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "ret", true)).await;
    let mut ok = publish("r/t", b"small", QoS::AtLeastOnce, 1);
    ok.retain = true;
    raw.publish_qos1(ok).await;
    let big = vec![7u8; 4096];
    for (qos, pkid) in [
        (QoS::AtMostOnce, 0),
        (QoS::AtLeastOnce, 2),
        (QoS::ExactlyOnce, 3),
    ] {
        let mut p = publish("r/t", &big, qos, pkid);
        p.retain = true;
        raw.send(&Packet::Publish(p)).await;
    }
    // The PUBACK and PUBREC refuse them (0x97), then the ping comes back.
    raw.send(&Packet::PingReq).await;
    let mut refusals = Vec::new();
    loop {
        match raw.recv().await {
            Some(Packet::PubAck(a)) | Some(Packet::PubRec(a)) => refusals.push(a.reason),
            Some(Packet::PingResp) => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(refusals, vec![0x97, 0x97]);
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "ret-s", true)).await;
    sub.subscribe(1, vec![filter("r/t", QoS::AtMostOnce)]).await;
    let got = sub.expect_publish().await;
    assert_eq!(&got.payload[..], b"small");
    assert!(got.retain);
    s.stop().await;
}

/// A client that stops reading is disconnected once a write has taken no bytes for
/// `write_stall`: its keep-alive cannot end it, as it is checked between writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_disconnected_after_the_write_stall() {
    let s = TestServer::start(|c| {
        c.mqtt.write_stall = Duration::from_millis(500);
        c.mqtt.slow_subscriber = fogline_broker::SlowConsumerPolicy::DropOldest;
    })
    .await;
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "stuck", true)).await;
    sub.subscribe(1, vec![filter("big/#", QoS::AtMostOnce)])
        .await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "pub", true)).await;
    let chunk = vec![1u8; 64 << 10];
    for i in 0..400 {
        p.send(&Packet::Publish(publish(
            "big/x",
            &chunk,
            QoS::AtMostOnce,
            0,
        )))
        .await;
        if i % 50 == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    // What was sent before the close can still be read; then the server has closed.
    let started = std::time::Instant::now();
    sub.expect_close().await;
    assert!(started.elapsed() < Duration::from_secs(9));
    // The publisher was never held up.
    p.sync().await;
    s.stop().await;
}

/// This process's data segment (heap and anonymous mappings), from /proc.
fn vm_data() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: usize = status
        .lines()
        .find_map(|l| l.strip_prefix("VmData:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmData");
    kib << 10
}

/// A retained message keeps its own bytes, not the 64 KiB read buffer it arrived in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retained_messages_hold_only_their_own_bytes() {
    // No stream captures the traffic: only what the retained store keeps is measured.
    let s = TestServer::start(|c| {
        c.broker.streams = vec![fogline_broker::StreamConfig {
            name: "other".into(),
            subjects: vec!["other/#".into()],
            storage: None,
            retention_bytes: None,
            retention_age: None,
            segment_bytes: None,
            sql: None,
        }];
    })
    .await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "sensors", true)).await;
    p.sync().await;
    let before = vm_data();
    // One message per read (each waits for its PUBACK), with 40 KiB of other traffic after
    // each, so that each retained message lands in a read buffer of its own: 8,000 x 64 KiB
    // would be 500 MiB.
    let noise = vec![0u8; 40 << 10];
    for i in 0..8_000u16 {
        let mut m = publish(&format!("site/dev{i}/temp"), b"21.5", QoS::AtLeastOnce, 1);
        m.retain = true;
        p.publish_qos1(m).await;
        p.publish_qos1(publish("noise", &noise, QoS::AtLeastOnce, 2))
            .await;
    }
    let grown = vm_data().saturating_sub(before);
    assert!(grown < 128 << 20, "grew by {} MiB", grown >> 20);
    // They are all retained.
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "reader", true)).await;
    sub.subscribe(1, vec![filter("site/dev7999/temp", QoS::AtMostOnce)])
        .await;
    assert_eq!(&sub.expect_publish().await.payload[..], b"21.5");
    s.stop().await;
}

/// `max_sessions` bounds the sessions held, connected or offline: past it a CONNECT is
/// refused (5.0: 0x97 quota exceeded, 3.1.1: 0x03 server unavailable), while taking over
/// or resuming a session that exists still works, and a session that ends makes room.
#[tokio::test]
async fn connects_past_max_sessions_are_refused_and_existing_sessions_still_attach() {
    let s = TestServer::start(|c| c.mqtt.max_sessions = 2).await;
    let (a, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "a", true)).await;
    assert_eq!(ack.code, 0);
    let mut kept = connect_packet(Version::V5, "kept", true);
    kept.props.session_expiry = Some(600);
    let (b, ack) = Raw::connect(&s.mqtt, kept).await;
    assert_eq!(ack.code, 0);
    drop(b); // offline, but its session still counts
    let (_, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "c", true)).await;
    assert_eq!(ack.code, 0x97);
    let (_, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "d", true)).await;
    assert_eq!(ack.code, 0x03);
    // Taking over "a" and resuming "kept" start no new session.
    let (a2, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "a", true)).await;
    assert_eq!(ack.code, 0);
    drop(a);
    let (_b2, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "kept", false)).await;
    assert_eq!(ack.code, 0);
    assert!(ack.session_present);
    // "a" has expiry 0: once it disconnects its session ends and "c" fits.
    drop(a2);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (_c, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "c", true)).await;
        if ack.code == 0 {
            break;
        }
        assert_eq!(ack.code, 0x97);
        assert!(
            tokio::time::Instant::now() < deadline,
            "the ended session never made room"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    s.stop().await;
}

/// `max_subscriptions` bounds one session's subscriptions: a filter past it is refused in
/// the SUBACK (5.0: 0x97, 3.1.1: 0x80) and the others are granted; changing the options of
/// a held filter is no new subscription, and an unsubscribe makes room.
#[tokio::test]
async fn subscriptions_past_max_subscriptions_are_refused_one_by_one() {
    let s = TestServer::start(|c| c.mqtt.max_subscriptions = 2).await;
    let (mut v5, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "many", true)).await;
    let codes = v5
        .subscribe(
            1,
            vec![
                filter("a", QoS::AtMostOnce),
                filter("b", QoS::AtLeastOnce),
                filter("c", QoS::AtMostOnce),
            ],
        )
        .await;
    assert_eq!(codes, vec![0, 1, 0x97]);
    assert_eq!(
        v5.subscribe(2, vec![filter("a", QoS::AtLeastOnce)]).await,
        vec![1]
    );
    v5.send(&Packet::Unsubscribe(Unsubscribe {
        pkid: 3,
        props: Default::default(),
        filters: vec!["b".into()],
    }))
    .await;
    assert!(matches!(v5.recv().await, Some(Packet::UnsubAck(_))));
    assert_eq!(
        v5.subscribe(4, vec![filter("c", QoS::AtMostOnce)]).await,
        vec![0]
    );
    // The refused filter delivers nothing; the granted ones do.
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "pub", true)).await;
    p.publish_qos1(publish("b", b"no", QoS::AtLeastOnce, 1))
        .await;
    p.publish_qos1(publish("c", b"yes", QoS::AtLeastOnce, 2))
        .await;
    assert_eq!(&v5.expect_publish().await.payload[..], b"yes");
    let (mut v4, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "many4", true)).await;
    let codes = v4
        .subscribe(
            1,
            vec![
                filter("a", QoS::AtMostOnce),
                filter("b", QoS::AtMostOnce),
                filter("c", QoS::AtMostOnce),
            ],
        )
        .await;
    assert_eq!(codes, vec![0, 0, 0x80]);
    s.stop().await;
}
