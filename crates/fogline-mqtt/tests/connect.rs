//! CONNECT / CONNACK, keep-alive, take-over and authentication, on raw bytes.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use fogline_mqtt::codec::{Packet, Properties, Version};

#[tokio::test]
async fn mqtt_3_1_0_1_first_packet_must_be_connect() {
    let s = TestServer::start(|_| {}).await;
    let mut raw = Raw::open(&s.mqtt, Version::V4).await;
    raw.send(&Packet::PingReq).await;
    assert!(raw.expect_close().await.is_empty());
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_1_0_2_second_connect_is_a_protocol_error() {
    let s = TestServer::start(|_| {}).await;
    for v in [Version::V4, Version::V5] {
        let (mut raw, ack) = Raw::connect(&s.mqtt, connect_packet(v, "twice", true)).await;
        assert_eq!(ack.code, 0);
        raw.send(&Packet::Connect(Box::new(connect_packet(v, "twice", true))))
            .await;
        let got = raw.expect_close().await;
        if v == Version::V5 {
            assert!(
                matches!(&got[..], [Packet::Disconnect(d)] if d.reason == 0x82),
                "{got:?}"
            );
        }
    }
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_1_2_2_v311_unsupported_protocol_level_gets_return_code_1() {
    let s = TestServer::start(|_| {}).await;
    let mut raw = Raw::open(&s.mqtt, Version::V4).await;
    // CONNECT, protocol "MQTT" level 6, clean session, keep alive 60, client id "x".
    raw.send_raw(&[
        0x10, 13, 0, 4, b'M', b'Q', b'T', b'T', 6, 0x02, 0, 60, 0, 1, b'x',
    ])
    .await;
    let got = raw.expect_close().await;
    assert!(
        matches!(&got[..], [Packet::ConnAck(a)] if a.code == 0x01 && !a.session_present),
        "{got:?}"
    );
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_1_2_3_reserved_connect_flag_closes() {
    let s = TestServer::start(|_| {}).await;
    let mut raw = Raw::open(&s.mqtt, Version::V4).await;
    raw.send_raw(&[
        0x10, 13, 0, 4, b'M', b'Q', b'T', b'T', 4, 0x03, 0, 60, 0, 1, b'x',
    ])
    .await;
    assert!(raw.expect_close().await.is_empty());
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_1_3_8_v311_empty_client_id_needs_clean_session() {
    let s = TestServer::start(|_| {}).await;
    let mut raw = Raw::open(&s.mqtt, Version::V4).await;
    raw.send(&Packet::Connect(Box::new(connect_packet(
        Version::V4,
        "",
        false,
    ))))
    .await;
    let got = raw.expect_close().await;
    assert!(
        matches!(&got[..], [Packet::ConnAck(a)] if a.code == 0x02),
        "{got:?}"
    );
    // [MQTT-3.1.3-6] with clean session the server assigns an identifier.
    let (_raw, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "", true)).await;
    assert_eq!(ack.code, 0);
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_2_2_16_v5_empty_client_id_is_assigned() {
    let s = TestServer::start(|_| {}).await;
    let (_raw, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "", true)).await;
    assert_eq!(ack.code, 0);
    let id = ack
        .props
        .assigned_client_id
        .clone()
        .expect("assigned client identifier");
    assert!(!id.is_empty());
    assert!(ack.props.receive_maximum.is_some());
    assert!(ack.props.maximum_packet_size.is_some());
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_1_2_24_keep_alive_is_enforced() {
    let s = TestServer::start(|_| {}).await;
    for v in [Version::V4, Version::V5] {
        let mut c = connect_packet(v, "sleepy", true);
        c.keep_alive = 1;
        let (mut raw, _) = Raw::connect(&s.mqtt, c).await;
        let start = std::time::Instant::now();
        let got = raw.expect_close().await;
        let waited = start.elapsed();
        assert!(
            waited >= Duration::from_millis(1400),
            "closed after {waited:?}"
        );
        assert!(waited < Duration::from_secs(4), "closed after {waited:?}");
        if v == Version::V5 {
            assert!(
                matches!(&got[..], [Packet::Disconnect(d)] if d.reason == 0x8D),
                "{got:?}"
            );
        }
    }
    // Pings keep it alive [MQTT-3.12.4-1].
    let mut c = connect_packet(Version::V4, "pinger", true);
    c.keep_alive = 1;
    let (mut raw, _) = Raw::connect(&s.mqtt, c).await;
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_millis(600)).await;
        raw.sync().await;
    }
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_1_4_3_same_client_id_takes_the_session_over() {
    let s = TestServer::start(|_| {}).await;
    let (mut first, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "dup", false)).await;
    let (mut second, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "dup", false)).await;
    assert_eq!(ack.code, 0);
    let got = first.expect_close().await;
    assert!(
        matches!(&got[..], [Packet::Disconnect(d)] if d.reason == 0x8E),
        "{got:?}"
    );
    second.sync().await;
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_2_2_2_session_present_follows_clean_start_and_expiry() {
    let s = TestServer::start(|_| {}).await;
    // 3.1.1: clean session 0 keeps the session.
    let (raw, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "keep", false)).await;
    assert!(!ack.session_present);
    drop(raw);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (raw, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "keep", false)).await;
    assert!(ack.session_present, "[MQTT-3.2.2-3]");
    drop(raw);
    tokio::time::sleep(Duration::from_millis(100)).await;
    // [MQTT-3.1.2-4] clean session 1 discards it; session present 0 [MQTT-3.2.2-2].
    let (raw, ack) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "keep", true)).await;
    assert!(!ack.session_present);
    drop(raw);
    // 5.0: session expiry 1 s; gone after it.
    let mut c = connect_packet(Version::V5, "exp", true);
    c.props.session_expiry = Some(1);
    let (raw, _) = Raw::connect(&s.mqtt, c.clone()).await;
    drop(raw);
    tokio::time::sleep(Duration::from_millis(200)).await;
    c.clean_start = false;
    let (raw, ack) = Raw::connect(&s.mqtt, c.clone()).await;
    assert!(
        ack.session_present,
        "within the expiry the session is resumed"
    );
    drop(raw);
    tokio::time::sleep(Duration::from_millis(1600)).await;
    let (_raw, ack) = Raw::connect(&s.mqtt, c).await;
    assert!(!ack.session_present, "[MQTT-3.1.2-23] the session expired");
    s.stop().await;
}

#[tokio::test]
async fn mqtt_3_14_2_2_session_expiry_cannot_be_raised_from_zero_at_disconnect() {
    let s = TestServer::start(|_| {}).await;
    let (mut raw, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "raise", true)).await;
    let mut d = Disconnect::default();
    d.props.session_expiry = Some(100);
    raw.send(&Packet::Disconnect(d)).await;
    let got = raw.expect_close().await;
    assert!(
        matches!(&got[..], [Packet::Disconnect(d)] if d.reason == 0x82),
        "{got:?}"
    );
    s.stop().await;
}

struct OnlyAlice;

impl fogline_mqtt::Authenticator for OnlyAlice {
    fn authenticate(
        &self,
        login: &fogline_mqtt::Login,
    ) -> Result<Option<String>, fogline_mqtt::Refused> {
        match (login.username.as_deref(), login.password.as_deref()) {
            (None, _) => Err(fogline_mqtt::Refused::NotAuthorized("anonymous".into())),
            (Some("alice"), Some(b"secret")) => Ok(Some("alice".into())),
            _ => Err(fogline_mqtt::Refused::BadCredentials),
        }
    }

    fn admits_anonymous(&self) -> bool {
        false
    }
}

#[tokio::test]
async fn mqtt_3_1_3_5_credentials_go_to_the_authentication_hook() {
    let (broker, _) = fogline_broker::Broker::open(fogline_broker::BrokerConfig {
        storage: fogline_broker::StorageMode::Memory,
        ..Default::default()
    })
    .expect("broker");
    let cfg = fogline_mqtt::MqttConfig {
        listen: vec!["127.0.0.1:0".into()],
        ..Default::default()
    };
    let server = fogline_mqtt::MqttServer::bind_with(cfg, broker, Arc::new(OnlyAlice))
        .await
        .expect("bind");
    let addr = server.local_addrs()[0].to_string();
    let task = tokio::spawn(server.run());
    // Bad user name or password, and not authorized, in either version's codes.
    for (v, bad, anonymous) in [(Version::V4, 0x04, 0x05), (Version::V5, 0x86, 0x87)] {
        for (user, code) in [(Some("mallory"), bad), (None, anonymous)] {
            let mut c = connect_packet(v, "mallory", true);
            c.username = user.map(Into::into);
            // 3.1.1 has no password without a user name [MQTT-3.1.2-22].
            c.password = user.map(|_| bytes::Bytes::from_static(b"guess"));
            let mut raw = Raw::open(&addr, v).await;
            raw.send(&Packet::Connect(Box::new(c))).await;
            let got = raw.expect_close().await;
            assert!(
                matches!(&got[..], [Packet::ConnAck(a)] if a.code == code && !a.session_present),
                "{got:?}"
            );
        }
        let mut c = connect_packet(v, "alice", true);
        c.username = Some("alice".into());
        c.password = Some(bytes::Bytes::from_static(b"secret"));
        let (_raw, ack) = Raw::connect(&addr, c).await;
        assert_eq!(ack.code, 0);
    }
    task.abort();
}

#[tokio::test]
async fn mqtt_4_12_0_1_v5_enhanced_authentication_is_refused_with_0x8c() {
    let s = TestServer::start(|_| {}).await;
    let mut c = connect_packet(Version::V5, "auth", true);
    c.props = Properties {
        auth_method: Some("SCRAM-SHA-1".into()),
        ..Properties::default()
    }
    .into();
    let mut raw = Raw::open(&s.mqtt, Version::V5).await;
    raw.send(&Packet::Connect(Box::new(c))).await;
    let got = raw.expect_close().await;
    assert!(
        matches!(&got[..], [Packet::ConnAck(a)] if a.code == 0x8C),
        "{got:?}"
    );
    s.stop().await;
}
