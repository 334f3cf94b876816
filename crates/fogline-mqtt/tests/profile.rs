//! Associative Rendezvous over MQTT (`docs/PROFILES.md`, "Over MQTT"): subscriptions with a
//! `fogline-interest` user property get only the records whose data profile (their user
//! properties) satisfies it; producers announce on `$fogline/announce/<topic>` and are told
//! `start` and `stop` on `$fogline/notify/<topic>`.

mod common;

use common::*;
use fogline_mqtt::codec::{Connect, Packet, Properties, Version};

fn v5(id: &str) -> Connect {
    connect_packet(Version::V5, id, true)
}

fn persistent(id: &str, clean: bool) -> Connect {
    let mut c = connect_packet(Version::V5, id, clean);
    c.props.session_expiry = Some(600);
    c
}

fn interest(text: &str) -> Properties {
    Properties {
        user: vec![("fogline-interest".into(), text.into())],
        ..Properties::default()
    }
}

/// A PUBLISH whose user properties are `profile` (`name=value` pairs, or bare names).
fn profiled(topic: &str, payload: &str, qos: QoS, pkid: u16, profile: &[&str]) -> Publish {
    let mut p = publish(topic, payload.as_bytes(), qos, pkid);
    for item in profile {
        let (k, v) = item.split_once('=').unwrap_or((item, ""));
        p.props.user.push((k.into(), v.into()));
    }
    p
}

/// Publishes the mixed records every interest test uses, at QoS 1; only `match-*` ones
/// satisfy `sensor=li* alt=100..500`.
async fn publish_mixed(p: &mut Raw, topic: &str, first_pkid: u16) {
    let records: [(&str, &[&str]); 6] = [
        ("match-1", &["type=drone", "sensor=lidar", "alt=120"]),
        ("camera", &["type=drone", "sensor=camera", "alt=120"]),
        ("too-high", &["sensor=lidar", "alt=900"]),
        ("no-profile", &[]),
        ("upper-case", &["sensor=LiDAR", "alt=200"]),
        ("match-2", &["sensor=lightbar", "alt=500", "urgent"]),
    ];
    for (i, (payload, profile)) in records.iter().enumerate() {
        let pkid = first_pkid + i as u16;
        p.publish_qos1(profiled(topic, payload, QoS::AtLeastOnce, pkid, profile))
            .await;
    }
}

async fn expect_payloads(c: &mut Raw, want: &[&str]) {
    for w in want {
        let m = c.expect_publish().await;
        assert_eq!(std::str::from_utf8(&m.payload).unwrap(), *w);
        if m.qos != QoS::AtMostOnce {
            c.send(&Packet::PubAck(Ack::ok(m.pkid))).await;
        }
    }
    c.expect_silence(200).await;
}

async fn expect_notice(c: &mut Raw, topic: &str, state: &str) {
    let m = c.expect_publish().await;
    assert_eq!(m.topic.as_str(), topic);
    assert_eq!(std::str::from_utf8(&m.payload).unwrap(), state);
    assert_eq!((m.qos, m.retain), (QoS::AtMostOnce, false));
}

async fn unsubscribe(c: &mut Raw, pkid: u16, f: &str) {
    c.send(&Packet::Unsubscribe(Unsubscribe {
        pkid,
        props: Default::default(),
        filters: vec![f.into()],
    }))
    .await;
    match c.recv().await {
        Some(Packet::UnsubAck(a)) => assert_eq!(a.codes, [0]),
        other => panic!("expected UNSUBACK, got {other:?}"),
    }
}

#[tokio::test]
async fn an_interest_subscription_gets_only_the_matching_records() {
    let s = TestServer::start(|_| {}).await;
    let (mut c, _) = Raw::connect(&s.mqtt, v5("consumer")).await;
    let codes = c
        .subscribe_with(
            1,
            vec![filter("site/#", QoS::AtLeastOnce)],
            interest("sensor=li* alt=100..500"),
        )
        .await;
    assert_eq!(codes, [1]);
    let (mut plain, _) = Raw::connect(&s.mqtt, v5("plain")).await;
    plain
        .subscribe(1, vec![filter("site/#", QoS::AtMostOnce)])
        .await;
    let (mut p, _) = Raw::connect(&s.mqtt, v5("producer")).await;
    publish_mixed(&mut p, "site/nj/lidar", 1).await;
    // Off the filter: not delivered whatever its profile.
    p.publish_qos1(profiled(
        "elsewhere",
        "off-filter",
        QoS::AtLeastOnce,
        20,
        &["sensor=lidar", "alt=120"],
    ))
    .await;

    let first = c.expect_publish().await;
    assert_eq!(&first.payload[..], b"match-1");
    let props: Vec<(&str, &str)> = first.props.user.iter().map(|(k, v)| (&**k, &**v)).collect();
    assert_eq!(
        props,
        [("type", "drone"), ("sensor", "lidar"), ("alt", "120")],
        "the data profile travels as user properties"
    );
    c.send(&Packet::PubAck(Ack::ok(first.pkid))).await;
    expect_payloads(&mut c, &["match-2"]).await;
    // A plain subscription gets them all.
    let all = [
        "match-1",
        "camera",
        "too-high",
        "no-profile",
        "upper-case",
        "match-2",
    ];
    expect_payloads(&mut plain, &all).await;
    assert_eq!(s.broker.interest_count(), 1);
    s.stop().await;
}

#[tokio::test]
async fn a_bad_interest_is_refused_with_0x83_and_a_reason_string() {
    let s = TestServer::start(|_| {}).await;
    let (mut c, _) = Raw::connect(&s.mqtt, v5("bad")).await;
    for (pkid, text) in [(1, "alt=500..100"), (2, "sensor=lidar @site/+"), (3, "a=")] {
        c.send(&Packet::Subscribe(Subscribe {
            pkid,
            props: interest(text).into(),
            filters: vec![
                filter("site/#", QoS::AtMostOnce),
                filter("x", QoS::AtMostOnce),
            ],
        }))
        .await;
        match c.recv().await {
            Some(Packet::SubAck(a)) => {
                assert_eq!(a.codes, [0x83, 0x83], "{text}");
                let why = a.props.reason_string.as_deref().unwrap_or_default();
                assert!(why.contains("fogline-interest"), "{text}: {why}");
            }
            other => panic!("expected SUBACK, got {other:?}"),
        }
    }
    // An interest on a shared subscription: 0x9E; the other filter is subscribed.
    let codes = c
        .subscribe_with(
            4,
            vec![
                filter("$share/g/site/#", QoS::AtMostOnce),
                filter("site/#", QoS::AtMostOnce),
            ],
            interest("sensor=lidar"),
        )
        .await;
    assert_eq!(codes, [0x9E, 0]);
    // Nothing was subscribed by the refused ones.
    let (mut p, _) = Raw::connect(&s.mqtt, v5("p")).await;
    p.publish_qos1(profiled("x", "x", QoS::AtLeastOnce, 1, &["sensor=lidar"]))
        .await;
    p.publish_qos1(profiled(
        "site/a",
        "a",
        QoS::AtLeastOnce,
        2,
        &["sensor=lidar"],
    ))
    .await;
    expect_payloads(&mut c, &["a"]).await;
    s.stop().await;
}

/// Asked for no problem information, the client gets the codes without a reason string.
#[tokio::test]
async fn mqtt_3_1_2_29_no_reason_string_without_problem_information() {
    let s = TestServer::start(|_| {}).await;
    let mut connect = v5("quiet");
    connect.props.request_problem_info = Some(0);
    let (mut c, _) = Raw::connect(&s.mqtt, connect).await;
    c.send(&Packet::Subscribe(Subscribe {
        pkid: 1,
        props: interest("alt=..x").into(),
        filters: vec![filter("site/#", QoS::AtMostOnce)],
    }))
    .await;
    match c.recv().await {
        Some(Packet::SubAck(a)) => {
            assert_eq!(a.codes, [0x83]);
            assert_eq!(a.props, Properties::default());
        }
        other => panic!("expected SUBACK, got {other:?}"),
    }
    s.stop().await;
}

#[tokio::test]
async fn subscribing_again_with_another_interest_changes_what_is_delivered() {
    let s = TestServer::start(|_| {}).await;
    let (mut c, _) = Raw::connect(&s.mqtt, v5("c")).await;
    let (mut p, _) = Raw::connect(&s.mqtt, v5("p")).await;
    let both = |pkid| {
        [
            profiled("t", "lidar", QoS::AtLeastOnce, pkid, &["sensor=lidar"]),
            profiled(
                "t",
                "camera",
                QoS::AtLeastOnce,
                pkid + 1,
                &["sensor=camera"],
            ),
        ]
    };
    let steps: [(Properties, &[&str]); 4] = [
        (interest("sensor=lidar"), &["lidar"]),
        (interest("sensor=camera"), &["camera"]),
        (Properties::default(), &["lidar", "camera"]),
        (interest("sensor=lidar"), &["lidar"]),
    ];
    for (i, (props, want)) in steps.into_iter().enumerate() {
        let pkid = 1 + i as u16 * 2;
        let codes = c
            .subscribe_with(pkid, vec![filter("t", QoS::AtLeastOnce)], props)
            .await;
        assert_eq!(codes, [1]);
        for m in both(pkid) {
            p.publish_qos1(m).await;
        }
        expect_payloads(&mut c, want).await;
        assert_eq!(s.broker.subscription_count(), 1, "replaced, not added");
    }
    s.stop().await;
}

#[tokio::test]
async fn a_persistent_sessions_interest_survives_a_restart() {
    let s = TestServer::start_in(tempfile::tempdir().expect("tempdir"), |_| {}).await;
    let (mut c, _) = Raw::connect(&s.mqtt, persistent("keeps", true)).await;
    let codes = c
        .subscribe_with(
            1,
            vec![filter("site/#", QoS::AtLeastOnce)],
            interest("sensor=li* alt=100..500"),
        )
        .await;
    assert_eq!(codes, [1]);
    drop(c);
    let dir = s.stop().await;

    let s = TestServer::start_in(dir, |_| {}).await;
    assert_eq!(s.broker.interest_count(), 1, "restored with its interest");
    let (mut p, _) = Raw::connect(&s.mqtt, v5("producer")).await;
    // Queued for the offline session, then delivered when it comes back.
    publish_mixed(&mut p, "site/nj/lidar", 1).await;
    let (mut c, ack) = Raw::connect(&s.mqtt, persistent("keeps", false)).await;
    assert!(ack.session_present);
    expect_payloads(&mut c, &["match-1", "match-2"]).await;
    publish_mixed(&mut p, "site/nj/lidar", 10).await;
    expect_payloads(&mut c, &["match-1", "match-2"]).await;
    s.stop().await;
}

/// The producer side of notify_interest, end to end; `leave` is how the consumer goes.
async fn producer_is_told(leave: &str) {
    let s = TestServer::start(|_| {}).await;
    let (mut p, _) = Raw::connect(&s.mqtt, v5("producer")).await;
    p.subscribe(1, vec![filter("$fogline/notify/#", QoS::AtMostOnce)])
        .await;
    let profile = "type=drone sensor=lidar geo=40.05,-74.40";
    p.publish_qos1(publish(
        "$fogline/announce/site/nj/lidar",
        profile.as_bytes(),
        QoS::AtLeastOnce,
        1,
    ))
    .await;
    let notice = "$fogline/notify/site/nj/lidar";
    expect_notice(&mut p, notice, "stop").await;
    assert_eq!(s.broker.producers().len(), 1);
    assert!(!s.broker.producers()[0].interested);

    // Somebody who wants only other sensors: still nobody.
    let (mut other, _) = Raw::connect(&s.mqtt, v5("other")).await;
    other
        .subscribe_with(
            1,
            vec![filter("site/#", QoS::AtMostOnce)],
            interest("sensor=camera"),
        )
        .await;
    p.expect_silence(200).await;

    let (mut c, _) = Raw::connect(&s.mqtt, v5("consumer")).await;
    c.subscribe_with(
        1,
        vec![filter("site/#", QoS::AtLeastOnce)],
        interest("sensor=li*"),
    )
    .await;
    expect_notice(&mut p, notice, "start").await;
    for i in 0..3u16 {
        p.publish_qos1(profiled(
            "site/nj/lidar",
            &format!("scan {i}"),
            QoS::AtLeastOnce,
            10 + i,
            &["type=drone", "sensor=lidar", "geo=40.05,-74.40"],
        ))
        .await;
    }
    expect_payloads(&mut c, &["scan 0", "scan 1", "scan 2"]).await;
    other.expect_silence(50).await;

    match leave {
        "unsubscribe" => unsubscribe(&mut c, 2, "site/#").await,
        _ => c.send(&Packet::Disconnect(Disconnect::default())).await,
    }
    expect_notice(&mut p, notice, "stop").await;
    p.expect_silence(200).await;

    // The announcement ends with the producer's connection.
    p.send(&Packet::Disconnect(Disconnect::default())).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while !s.broker.producers().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "still announced");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    s.stop().await;
}

#[tokio::test]
async fn a_producer_is_told_to_stop_when_the_consumer_unsubscribes() {
    producer_is_told("unsubscribe").await;
}

#[tokio::test]
async fn a_producer_is_told_to_stop_when_the_consumer_disconnects() {
    producer_is_told("disconnect").await;
}

/// Control PUBLISHes are never routed; bad ones are ignored and refused by reason code;
/// QoS 2 ones are acknowledged as any other; an empty payload withdraws.
#[tokio::test]
async fn announcements_are_control_messages() {
    let s = TestServer::start(|_| {}).await;
    let (mut spy, _) = Raw::connect(&s.mqtt, v5("spy")).await;
    spy.subscribe(
        1,
        vec![
            filter("$fogline/announce/#", QoS::AtMostOnce),
            filter("$fogline/notify/#", QoS::AtMostOnce),
        ],
    )
    .await;
    let (mut p, _) = Raw::connect(&s.mqtt, v5("p")).await;
    let acked = |p: Option<Packet>| match p {
        Some(Packet::PubAck(a)) => a.reason,
        other => panic!("expected PUBACK, got {other:?}"),
    };
    for (i, (topic, payload, reason)) in [
        ("$fogline/announce/a", &b"a="[..], 0x99),
        ("$fogline/announce/a", b"\xff", 0x99),
        ("$fogline/announce/", b"a=1", 0x90),
        ("$fogline/notify/a", b"start", 0x90),
        ("$fogline/announce/a", b"sensor=lidar", 0),
    ]
    .into_iter()
    .enumerate()
    {
        p.send(&Packet::Publish(publish(
            topic,
            payload,
            QoS::AtLeastOnce,
            i as u16 + 1,
        )))
        .await;
        assert_eq!(acked(p.recv().await), reason, "{topic} {payload:?}");
    }
    assert_eq!(s.broker.producers().len(), 1);
    // QoS 2: PUBREC, then PUBREL and PUBCOMP; a redelivery is not applied again.
    let q2 = publish("$fogline/announce/b", b"x", QoS::ExactlyOnce, 9);
    p.send(&Packet::Publish(q2.clone())).await;
    assert!(matches!(p.recv().await, Some(Packet::PubRec(a)) if a.reason == 0));
    p.send(&Packet::Publish(q2)).await;
    assert!(matches!(p.recv().await, Some(Packet::PubRec(a)) if a.reason == 0));
    p.send(&Packet::PubRel(Ack::ok(9))).await;
    assert!(matches!(p.recv().await, Some(Packet::PubComp(a)) if a.reason == 0));
    assert_eq!(s.broker.producers().len(), 2);
    // QoS 0 withdraws too; the announcer subscribed to no notices, so it got none.
    p.send(&Packet::Publish(publish(
        "$fogline/announce/a",
        b"",
        QoS::AtMostOnce,
        0,
    )))
    .await;
    p.sync().await;
    let left: Vec<String> = s.broker.producers().into_iter().map(|i| i.topic).collect();
    assert_eq!(left, ["b"]);
    p.expect_silence(100).await;
    spy.expect_silence(100).await;
    s.stop().await;
}

/// MQTT 3.1.1 clients announce and are told too (there is no interest on their SUBSCRIBE).
#[tokio::test]
async fn a_3_1_1_client_announces_and_is_told() {
    let s = TestServer::start(|_| {}).await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "old", true)).await;
    p.subscribe(1, vec![filter("$fogline/notify/+", QoS::AtLeastOnce)])
        .await;
    p.publish_qos1(publish("$fogline/announce/t", b"k=v", QoS::AtLeastOnce, 1))
        .await;
    expect_notice(&mut p, "$fogline/notify/t", "stop").await;
    let (mut c, _) = Raw::connect(&s.mqtt, v5("c")).await;
    c.subscribe_with(1, vec![filter("t", QoS::AtMostOnce)], interest("k=v"))
        .await;
    expect_notice(&mut p, "$fogline/notify/t", "start").await;
    s.stop().await;
}

/// An announcement is not kept with a persistent session: a producer that connects again
/// is told nothing until it announces again.
#[tokio::test]
async fn an_announcement_ends_with_its_connection_not_its_session() {
    let s = TestServer::start(|_| {}).await;
    let (mut c, _) = Raw::connect(&s.mqtt, v5("c")).await;
    c.subscribe(1, vec![filter("t", QoS::AtMostOnce)]).await;
    let (mut p, _) = Raw::connect(&s.mqtt, persistent("producer", true)).await;
    p.subscribe(1, vec![filter("$fogline/notify/#", QoS::AtMostOnce)])
        .await;
    p.publish_qos1(publish("$fogline/announce/t", b"k=v", QoS::AtLeastOnce, 1))
        .await;
    expect_notice(&mut p, "$fogline/notify/t", "start").await;
    drop(p);
    let deadline = tokio::time::Instant::now() + WAIT;
    while !s.broker.producers().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "still announced");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let (mut p, ack) = Raw::connect(&s.mqtt, persistent("producer", false)).await;
    assert!(ack.session_present);
    unsubscribe(&mut c, 2, "t").await;
    p.expect_silence(200).await;
    p.publish_qos1(publish("$fogline/announce/t", b"k=v", QoS::AtLeastOnce, 2))
        .await;
    expect_notice(&mut p, "$fogline/notify/t", "stop").await;
    s.stop().await;
}
