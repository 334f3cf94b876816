//! Mosquitto's `$SYS/broker/...` topics, as MQTT tools read them; and what the broker counts
//! of the messages MQTT sessions drop.

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use fogline_broker::DropReason;
use fogline_mqtt::codec::{QoS, Version};

fn persistent(id: &str) -> fogline_mqtt::codec::Connect {
    let mut c = connect_packet(Version::V5, id, false);
    c.props.session_expiry = Some(600);
    c
}

/// Values of `$SYS` topics received until `done` holds for them.
async fn watch_sys(
    raw: &mut Raw,
    mut done: impl FnMut(&HashMap<String, String>) -> bool,
) -> HashMap<String, String> {
    let mut seen = HashMap::new();
    while !done(&seen) {
        let p = tokio::time::timeout(Duration::from_secs(30), raw.expect_publish())
            .await
            .unwrap_or_else(|_| panic!("$SYS values never became what was awaited: {seen:?}"));
        seen.insert(
            p.topic.to_string(),
            String::from_utf8_lossy(&p.payload).into_owned(),
        );
    }
    seen
}

#[tokio::test]
async fn sys_topics_tell_what_mosquitto_tells() {
    let s = TestServer::start(|c| c.mqtt.sys_interval = Duration::from_millis(100)).await;
    let (mut sys, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "sys", true)).await;
    sys.subscribe(1, vec![filter("$SYS/broker/#", QoS::AtMostOnce)])
        .await;
    // The values are retained: the first ones seen may be from a tick before this client
    // connected, so wait for a tick that counts it.
    let seen = watch_sys(&mut sys, |m| {
        m.len() >= 24 && m.get("$SYS/broker/clients/connected").map(String::as_str) == Some("1")
    })
    .await;
    assert_eq!(
        seen["$SYS/broker/version"],
        format!("fogline {}", env!("CARGO_PKG_VERSION"))
    );
    assert!(seen["$SYS/broker/uptime"].ends_with(" seconds"));
    assert_eq!(seen["$SYS/broker/clients/connected"], "1");
    for topic in [
        "$SYS/broker/clients/total",
        "$SYS/broker/clients/maximum",
        "$SYS/broker/clients/disconnected",
        "$SYS/broker/messages/received",
        "$SYS/broker/messages/sent",
        "$SYS/broker/bytes/received",
        "$SYS/broker/bytes/sent",
        "$SYS/broker/subscriptions/count",
        "$SYS/broker/retained messages/count",
        "$SYS/broker/load/messages/received/1min",
        "$SYS/broker/load/messages/sent/15min",
        "$SYS/broker/load/bytes/received/5min",
    ] {
        assert!(seen.contains_key(topic), "{topic} missing: {seen:?}");
    }
    // What others publish shows up in the counts and the load.
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "pub", true)).await;
    for i in 0..20u16 {
        p.publish_qos1(publish("sys/t", b"x", QoS::AtLeastOnce, i + 1))
            .await;
    }
    let seen = watch_sys(&mut sys, |m| {
        m.get("$SYS/broker/messages/received")
            .and_then(|v| v.parse::<u64>().ok())
            .is_some_and(|n| n >= 20)
            && m.get("$SYS/broker/load/messages/received/1min")
                .and_then(|v| v.parse::<f64>().ok())
                .is_some_and(|l| l > 0.0)
    })
    .await;
    assert_eq!(seen["$SYS/broker/clients/connected"], "2");
    // A new subscriber gets the values at once: they are retained.
    let (mut late, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "late", true)).await;
    late.subscribe(1, vec![filter("$SYS/broker/version", QoS::AtMostOnce)])
        .await;
    let v = late.expect_publish().await;
    assert!(v.retain, "retained");
    // `#` does not match `$SYS` topics [MQTT-4.7.2-1].
    let (mut all, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "all", true)).await;
    all.subscribe(1, vec![filter("#", QoS::AtMostOnce)]).await;
    all.expect_silence(400).await;
    s.stop().await;
}

#[tokio::test]
async fn sys_topics_can_be_turned_off() {
    let s = TestServer::start(|c| c.mqtt.sys_interval = Duration::ZERO).await;
    let (mut sys, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "sys", true)).await;
    sys.subscribe(1, vec![filter("$SYS/#", QoS::AtMostOnce)])
        .await;
    sys.expect_silence(400).await;
    s.stop().await;
}

#[tokio::test]
async fn messages_an_offline_session_drops_are_counted() {
    let s = TestServer::start(|c| c.mqtt.max_queued = 3).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, persistent("away")).await;
    sub.subscribe(1, vec![filter("d/t", QoS::AtLeastOnce)])
        .await;
    drop(sub);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "p", true)).await;
    for i in 0..10u16 {
        p.publish_qos1(publish("d/t", b"m", QoS::AtLeastOnce, i + 1))
            .await;
    }
    // Expired while waiting: a message with a one-second expiry, then a wait.
    let mut short = publish("d/t", b"short", QoS::AtLeastOnce, 20);
    short.props.message_expiry = Some(1);
    p.publish_qos1(short).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    while s.broker.stats().dropped(DropReason::SessionFull) < 7 {
        assert!(tokio::time::Instant::now() < deadline, "drops not counted");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (mut back, _) = Raw::connect(&s.mqtt, persistent("away")).await;
    let mut got = 0;
    while let Ok(Some(fogline_mqtt::codec::Packet::Publish(m))) =
        back.recv_within(Duration::from_millis(500)).await
    {
        got += 1;
        back.send(&fogline_mqtt::codec::Packet::PubAck(
            fogline_mqtt::codec::Ack::ok(m.pkid),
        ))
        .await;
    }
    assert_eq!(got, 2, "the newest three were kept, one of them expired");
    assert_eq!(s.broker.stats().dropped(DropReason::Expired), 1);
    s.stop().await;
}
