//! SUBSCRIBE / UNSUBSCRIBE, wildcards, retained messages, subscription
//! options, shared subscriptions, wills, and the routing shared with
//! native clients, on raw bytes.

mod common;

use std::time::Duration;

use common::*;
use fogline_broker::{Batch, SubscribeOptions};
use fogline_mqtt::codec::{Packet, Properties, Version};
use fogline_wire::{Headers, HeadersBuilder, RecordBlock};

#[tokio::test]
async fn mqtt_4_7_wildcards_match_and_mqtt_4_7_2_1_dollar_topics_are_excluded() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "w", true)).await;
    let codes = sub
        .subscribe(
            1,
            vec![
                filter("a/+/c", QoS::AtMostOnce),
                filter("b/#", QoS::AtMostOnce),
                filter("#", QoS::AtMostOnce),
            ],
        )
        .await;
    assert_eq!(
        codes,
        vec![0, 0, 0],
        "[MQTT-3.9.3-1] one code per filter, in order"
    );
    let (mut pubr, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "p", true)).await;
    for t in ["a/b/c", "$SYS/x", "b"] {
        pubr.send(&Packet::Publish(publish(
            t,
            t.as_bytes(),
            QoS::AtMostOnce,
            0,
        )))
        .await;
    }
    pubr.sync().await;
    let mut got = Vec::new();
    while let Ok(Some(Packet::Publish(p))) = sub.recv_within(Duration::from_millis(300)).await {
        got.push(p.topic.to_string());
    }
    got.sort();
    // a/b/c matches a/+/c and #; b matches b/# and #; $SYS/x matches nothing.
    assert_eq!(got, vec!["a/b/c", "a/b/c", "b", "b"]);
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_8_3_invalid_filters_get_a_failure_code() {
    let s = TestServer::start(|_| {}).await;
    for (v, code) in [(Version::V4, 0x80), (Version::V5, 0x8F)] {
        let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(v, "bad", true)).await;
        let codes = sub
            .subscribe(
                1,
                vec![
                    filter("a/#/b", QoS::AtLeastOnce),
                    filter("ok/+", QoS::ExactlyOnce),
                    filter("$share/g+/x", QoS::AtMostOnce),
                ],
            )
            .await;
        assert_eq!(codes, vec![code, 2, code]);
    }
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_10_4_unsubscribe_stops_delivery_and_reports_missing_filters() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "u", true)).await;
    sub.subscribe(1, vec![filter("u/#", QoS::AtMostOnce)]).await;
    sub.send(&Packet::Unsubscribe(Unsubscribe {
        pkid: 9,
        props: Default::default(),
        filters: vec!["u/#".into(), "nope".into()],
    }))
    .await;
    match sub.recv().await {
        Some(Packet::UnsubAck(a)) => {
            assert_eq!(a.pkid, 9, "[MQTT-3.10.4-4]");
            assert_eq!(a.codes, vec![0x00, 0x11]);
        }
        other => panic!("{other:?}"),
    }
    let (mut pubr, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "p", true)).await;
    pubr.publish_qos1(publish("u/x", b"x", QoS::AtLeastOnce, 1))
        .await;
    sub.expect_silence(300).await;
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_3_1_retained_messages_are_stored_replaced_and_deleted() {
    let s = TestServer::start(|_| {}).await;
    let (mut pubr, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "p", true)).await;
    let mut live = {
        let (mut r, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "live", true)).await;
        r.subscribe(1, vec![filter("ret/#", QoS::AtLeastOnce)])
            .await;
        r
    };
    for (topic, body, id) in [
        ("ret/a", &b"old"[..], 1),
        ("ret/a", b"new", 2),
        ("ret/b", b"b", 3),
        ("ret/b", b"", 4),
    ] {
        let mut p = publish(topic, body, QoS::AtLeastOnce, id);
        p.retain = true;
        pubr.publish_qos1(p).await;
    }
    // [MQTT-3.3.1-9] forwarded to existing subscribers with retain 0.
    for _ in 0..4 {
        let p = live.expect_publish().await;
        assert!(!p.retain);
        live.send(&Packet::PubAck(Ack::ok(p.pkid))).await;
    }
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "late", true)).await;
    sub.subscribe(1, vec![filter("ret/#", QoS::AtMostOnce)])
        .await;
    let p = sub.expect_publish().await;
    // [MQTT-3.3.1-6] sent on subscribe with retain 1 [MQTT-3.3.1-8]; [MQTT-3.3.1-5] replaced;
    // [MQTT-3.3.1-10] the empty payload deleted ret/b.
    assert_eq!(
        (p.topic.as_str(), &p.payload[..], p.retain),
        ("ret/a", &b"new"[..], true)
    );
    assert_eq!(p.qos, QoS::AtMostOnce, "the subscription's QoS caps it");
    sub.expect_silence(300).await;
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_8_3_v5_subscription_options_no_local_retain_as_published_retain_handling() {
    let s = TestServer::start(|_| {}).await;
    let (mut me, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "me", true)).await;
    let mut f = filter("opt/#", QoS::AtMostOnce);
    f.no_local = true;
    me.subscribe(1, vec![f]).await;
    me.send(&Packet::Publish(publish(
        "opt/mine",
        b"x",
        QoS::AtMostOnce,
        0,
    )))
    .await;
    me.sync().await;
    me.expect_silence(300).await; // [MQTT-3.8.3-3] no local
    let (mut other, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "o", true)).await;
    let mut r = publish("opt/kept", b"r", QoS::AtLeastOnce, 1);
    r.retain = true;
    other.publish_qos1(r.clone()).await;
    assert!(!me.expect_publish().await.retain);
    // retain as published keeps the flag on live messages [MQTT-3.3.1-12].
    let (mut rap, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "rap", true)).await;
    let mut f = filter("opt/#", QoS::AtMostOnce);
    f.retain_as_published = true;
    f.retain_handling = 2; // [MQTT-3.3.1-11] never send retained on subscribe
    rap.subscribe(1, vec![f.clone()]).await;
    rap.expect_silence(300).await;
    r.pkid = 2;
    other.publish_qos1(r).await;
    assert!(rap.expect_publish().await.retain);
    // retain handling 1: only for a new subscription [MQTT-3.3.1-10 (5.0)].
    let (mut rh1, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "rh1", true)).await;
    let mut f = filter("opt/#", QoS::AtMostOnce);
    f.retain_handling = 1;
    rh1.subscribe(1, vec![f.clone()]).await;
    assert!(rh1.expect_publish().await.retain);
    rh1.subscribe(2, vec![f]).await;
    rh1.expect_silence(300).await;
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_3_4_subscription_identifiers_are_returned() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "ids", true)).await;
    let props = Properties {
        subscription_ids: vec![42],
        ..Properties::default()
    };
    sub.subscribe_with(1, vec![filter("id/#", QoS::AtMostOnce)], props)
        .await;
    let (mut pubr, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "p", true)).await;
    pubr.send(&Packet::Publish(publish("id/x", b"x", QoS::AtMostOnce, 0)))
        .await;
    assert_eq!(sub.expect_publish().await.props.subscription_ids, vec![42]);
    s.stop().await;
}

#[tokio::test]
async fn mqtt_4_8_2_shared_subscriptions_deliver_each_message_to_one_member() {
    let s = TestServer::start(|_| {}).await;
    let mut members = Vec::new();
    for (i, v) in [Version::V4, Version::V5].into_iter().enumerate() {
        let (mut m, _) = Raw::connect(&s.mqtt, connect_packet(v, &format!("m{i}"), true)).await;
        assert_eq!(
            m.subscribe(1, vec![filter("$share/g/jobs/+", QoS::AtLeastOnce)])
                .await,
            vec![1]
        );
        members.push(m);
    }
    let (mut pubr, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "p", true)).await;
    for i in 1..=10u16 {
        pubr.publish_qos1(publish("jobs/x", &[i as u8], QoS::AtLeastOnce, i))
            .await;
    }
    let mut seen = Vec::new();
    for m in &mut members {
        while let Ok(Some(Packet::Publish(p))) = m.recv_within(Duration::from_millis(300)).await {
            seen.push(p.payload[0]);
            m.send(&Packet::PubAck(Ack::ok(p.pkid))).await;
        }
    }
    seen.sort();
    assert_eq!(seen, (1..=10).collect::<Vec<u8>>());
    s.stop().await;
}

fn will_connect(v: Version, id: &str, delay: Option<u32>) -> fogline_mqtt::codec::Connect {
    let mut c = connect_packet(v, id, true);
    let props = Properties {
        will_delay: delay,
        ..Properties::default()
    };
    c.will = Some(Will {
        topic: "wills/x".into(),
        payload: bytes::Bytes::from_static(b"gone"),
        qos: QoS::AtLeastOnce,
        retain: false,
        props: props.into(),
    });
    c
}

#[tokio::test]
async fn mqtt_3_1_2_8_will_is_published_on_abnormal_close_and_3_1_2_10_not_after_disconnect() {
    let s = TestServer::start(|_| {}).await;
    let (mut watcher, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "watch", true)).await;
    watcher
        .subscribe(1, vec![filter("wills/#", QoS::AtLeastOnce)])
        .await;
    for v in [Version::V4, Version::V5] {
        let (dying, _) = Raw::connect(&s.mqtt, will_connect(v, "dying", None)).await;
        drop(dying);
        let p = watcher.expect_publish().await;
        assert_eq!(&p.payload[..], b"gone");
        watcher.send(&Packet::PubAck(Ack::ok(p.pkid))).await;
        let (mut polite, _) = Raw::connect(&s.mqtt, will_connect(v, "polite", None)).await;
        polite
            .send(&Packet::Disconnect(Disconnect::default()))
            .await;
        watcher.expect_silence(300).await;
    }
    // 5.0: reason 0x04 asks for the will.
    let (mut asks, _) = Raw::connect(&s.mqtt, will_connect(Version::V5, "asks", None)).await;
    asks.send(&Packet::Disconnect(Disconnect {
        reason: 0x04,
        props: Default::default(),
    }))
    .await;
    assert_eq!(&watcher.expect_publish().await.payload[..], b"gone");
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_1_3_9_will_delay_and_reconnect_cancels_the_will() {
    let s = TestServer::start(|_| {}).await;
    let (mut watcher, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "watch", true)).await;
    watcher
        .subscribe(1, vec![filter("wills/#", QoS::AtMostOnce)])
        .await;
    let mut c = will_connect(Version::V5, "delayed", Some(1));
    c.props.session_expiry = Some(60);
    let (d, _) = Raw::connect(&s.mqtt, c.clone()).await;
    drop(d);
    watcher.expect_silence(500).await;
    let start = std::time::Instant::now();
    assert_eq!(&watcher.expect_publish().await.payload[..], b"gone");
    assert!(start.elapsed() < Duration::from_secs(2));
    // Reconnecting within the delay: no will.
    let (d, _) = Raw::connect(&s.mqtt, c.clone()).await;
    drop(d);
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.clean_start = false;
    let (_back, ack) = Raw::connect(&s.mqtt, c).await;
    assert!(ack.session_present);
    watcher.expect_silence(1500).await;
    s.stop().await;
}

#[tokio::test]
async fn one_routing_world_mqtt_and_native_share_topics_and_headers() {
    let s = TestServer::start(|_| {}).await;
    // Native subscriber on the broker (what a native connection does).
    let waker = std::sync::Arc::new(tokio::sync::Notify::new());
    let origin = s.broker.next_origin();
    let native = s
        .broker
        .subscribe("mix/#", origin, SubscribeOptions::default(), waker.clone())
        .expect("subscribe");
    let (mut m, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "m", true)).await;
    m.subscribe(1, vec![filter("mix/#", QoS::AtLeastOnce)])
        .await;
    let mut p = publish("mix/from-mqtt", b"hello", QoS::AtLeastOnce, 1);
    p.props.user = vec![("sensor".into(), "lidar".into())];
    p.props.content_type = Some("text/plain".into());
    m.publish_qos1(p).await;
    // MQTT -> native: one record, payload verbatim, user property -> header, reserved keys for the rest.
    tokio::time::timeout(WAIT, waker.notified())
        .await
        .expect("native delivery");
    let mut got = Vec::new();
    native.queue().drain(&mut got, usize::MAX);
    let rec = got[0].records.iter().next().expect("a record");
    assert_eq!(&rec.payload[..], b"hello");
    let h = Headers::parse(rec.headers).expect("headers");
    assert_eq!(h.get("sensor").as_deref(), Some(&b"lidar"[..]));
    assert_eq!(
        h.get("mqtt.content_type").as_deref(),
        Some(&b"text/plain"[..])
    );
    assert_eq!(h.get("mqtt.qos").as_deref(), Some(&b"1"[..]));
    // MQTT's own copy comes back too (no local is off).
    let echo = m.expect_publish().await;
    m.send(&Packet::PubAck(Ack::ok(echo.pkid))).await;
    // native -> MQTT: headers become user properties; native records count as QoS 1.
    let headers = HeadersBuilder::new()
        .add("type", "drone")
        .finish()
        .expect("headers");
    let records =
        RecordBlock::from_records([(0u64, &headers[..], &b"from native"[..])]).expect("block");
    s.broker
        .publish(
            Batch {
                topic: "mix/native".into(),
                records,
                timestamp: fogline_broker::now_micros(),
                priority: false,
                origin,
            },
            fogline_broker::Handoff::Direct,
        )
        .await
        .expect("publish");
    let p = m.expect_publish().await;
    assert_eq!(
        (p.topic.as_str(), &p.payload[..], p.qos),
        ("mix/native", &b"from native"[..], QoS::AtLeastOnce)
    );
    assert_eq!(p.props.user, vec![("type".into(), "drone".into())]);
    s.broker.unsubscribe(&native);
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_1_2_17_a_retained_will_is_kept_as_retained() {
    let s = TestServer::start(|_| {}).await;
    let mut c = will_connect(Version::V4, "retained-will", None);
    if let Some(w) = c.will.as_mut() {
        w.retain = true;
    }
    let (dying, _) = Raw::connect(&s.mqtt, c).await;
    drop(dying);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (mut late, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "late", true)).await;
    late.subscribe(1, vec![filter("wills/#", QoS::AtLeastOnce)])
        .await;
    let p = late.expect_publish().await;
    assert!(p.retain);
    assert_eq!(&p.payload[..], b"gone");
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_3_5_1_overlapping_subscriptions_deliver_at_the_maximum_qos() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "ov", true)).await;
    sub.subscribe(
        1,
        vec![
            filter("ov/#", QoS::AtMostOnce),
            filter("ov/+", QoS::ExactlyOnce),
        ],
    )
    .await;
    let (mut pubr, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "p", true)).await;
    pubr.send(&Packet::Publish(publish("ov/x", b"x", QoS::ExactlyOnce, 1)))
        .await;
    assert!(matches!(pubr.recv().await, Some(Packet::PubRec(_))));
    pubr.send(&Packet::PubRel(Ack::ok(1))).await;
    let mut qos = Vec::new();
    while let Ok(Some(p)) = sub.recv_within(Duration::from_millis(300)).await {
        match p {
            Packet::Publish(p) => {
                qos.push(p.qos);
                if p.qos == QoS::ExactlyOnce {
                    sub.send(&Packet::PubRec(Ack::ok(p.pkid))).await;
                }
            }
            Packet::PubRel(r) => sub.send(&Packet::PubComp(Ack::ok(r.pkid))).await,
            other => panic!("{other:?}"),
        }
    }
    // One copy per matching subscription; the highest one carries QoS 2.
    assert!(qos.contains(&QoS::ExactlyOnce), "{qos:?}");
    s.stop().await;
}

/// The will goes out when the session ends, if that comes before its delay: at the expiry
/// (the delay is capped there, and both deadlines met: the expiry could win and drop the
/// will) and when a clean start takes the client id (it waited for its delay before).
#[tokio::test]
async fn mqtt_3_1_3_9_the_will_goes_out_when_the_session_ends_first() {
    let s = TestServer::start(|_| {}).await;
    let (mut watcher, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "watch", true)).await;
    watcher
        .subscribe(1, vec![filter("wills/#", QoS::AtMostOnce)])
        .await;
    for round in 0..4 {
        // A delay past the expiry: capped, so both fire at 1 s.
        let mut c = will_connect(Version::V5, &format!("ends{round}"), Some(5));
        c.props.session_expiry = Some(1);
        let (d, _) = Raw::connect(&s.mqtt, c).await;
        drop(d);
        let start = std::time::Instant::now();
        assert_eq!(
            &watcher.expect_publish().await.payload[..],
            b"gone",
            "round {round}"
        );
        assert!(start.elapsed() < Duration::from_secs(3));
    }
    // A clean start with the same client id ends the old session: its will goes out then.
    let mut c = will_connect(Version::V5, "replaced", Some(30));
    c.props.session_expiry = Some(60);
    let (d, _) = Raw::connect(&s.mqtt, c).await;
    drop(d);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (_new, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "replaced", true)).await;
    assert!(!ack.session_present);
    let start = std::time::Instant::now();
    assert_eq!(&watcher.expect_publish().await.payload[..], b"gone");
    assert!(start.elapsed() < Duration::from_secs(3));
    s.stop().await;
}

/// A subscriber the broker cuts off (it did not keep up, and its queue's slow-consumer
/// policy closed it) is told and disconnected, and its session's subscription goes on: it
/// went dead, silently, and delivered nothing again even after a reconnect.
#[tokio::test]
async fn a_subscription_cut_off_as_slow_is_renewed_and_its_client_told() {
    let s = TestServer::start(|c| {
        c.mqtt.slow_subscriber = fogline_broker::SlowConsumerPolicy::Disconnect;
        c.mqtt.max_queued = 4;
        c.mqtt.max_inflight = 2;
        c.broker.subscriptions.max_records = 4;
    })
    .await;
    let mut c = connect_packet(Version::V5, "slow", false);
    c.props.session_expiry = Some(600);
    let (mut slow, _) = Raw::connect(&s.mqtt, c.clone()).await;
    slow.subscribe(1, vec![filter("cut/#", QoS::AtLeastOnce)])
        .await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "pub", true)).await;
    // The subscriber acks nothing: two in flight, four pending, then its broker queue fills.
    for i in 0..40u16 {
        p.publish_qos1(publish("cut/x", &i.to_be_bytes(), QoS::AtLeastOnce, i + 1))
            .await;
    }
    let got = slow.expect_close().await;
    assert!(
        matches!(got.last(), Some(Packet::Disconnect(d)) if d.reason == 0x97),
        "{got:?}"
    );
    // The session resumes and its subscription delivers again.
    c.clean_start = false;
    let (mut back, ack) = Raw::connect(&s.mqtt, c).await;
    assert!(ack.session_present);
    p.publish_qos1(publish("cut/x", b"after", QoS::AtLeastOnce, 100))
        .await;
    let mut seen_after = false;
    for _ in 0..20 {
        let m = back.expect_publish().await;
        back.send(&Packet::PubAck(Ack::ok(m.pkid))).await;
        if &m.payload[..] == b"after" {
            seen_after = true;
            break;
        }
    }
    assert!(seen_after, "the resumed session's subscription delivers");
    s.stop().await;
}

/// Retained messages sent on SUBSCRIBE count against `max_queued`: a client repeating
/// SUBSCRIBE `#` over many retained topics cannot queue without bound.
#[tokio::test]
async fn retained_messages_on_subscribe_are_bounded_by_max_queued() {
    let s = TestServer::start(|c| {
        c.mqtt.max_queued = 10;
    })
    .await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "keeper", true)).await;
    for i in 0..50u16 {
        let mut m = publish(&format!("kept/{i}"), b"v", QoS::AtLeastOnce, i + 1);
        m.retain = true;
        p.publish_qos1(m).await;
    }
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "greedy", true)).await;
    for pkid in 1..=5u16 {
        sub.send(&Packet::Subscribe(fogline_mqtt::codec::Subscribe {
            pkid,
            props: Properties::default().into(),
            filters: vec![filter("kept/#", QoS::AtMostOnce)],
        }))
        .await;
    }
    let (mut got, mut acks) = (0, 0);
    loop {
        match sub.recv_within(Duration::from_millis(500)).await {
            Ok(Some(Packet::Publish(_))) => got += 1,
            Ok(Some(Packet::SubAck(_))) => acks += 1,
            other => {
                assert!(matches!(other, Err(())), "{other:?}");
                break;
            }
        }
    }
    assert_eq!(acks, 5);
    // Each SUBSCRIBE queues 10 at most (all 50 each, 250 in all, before); how many passes
    // the connection made between them depends on how the reads fell.
    assert!((10..=50).contains(&got), "{got} retained messages");
    s.stop().await;
}
