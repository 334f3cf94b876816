//! Topic filter syntax and matching without normalization.

mod common;

use common::*;
use fogline_mqtt::codec::{Packet, Version};

#[tokio::test]
async fn mqtt_4_7_1_2_v5_and_4_7_1_3_v311_a_single_level_wildcard_takes_a_whole_level() {
    let s = TestServer::start(|_| {}).await;
    for (v, fail) in [(Version::V4, 0x80), (Version::V5, 0x8F)] {
        let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(v, "plus", true)).await;
        let codes = sub
            .subscribe(
                1,
                vec![
                    filter("a+/b", QoS::AtMostOnce),
                    filter("a/+b", QoS::AtMostOnce),
                    filter("+/b/+", QoS::AtMostOnce),
                    filter("+", QoS::AtMostOnce),
                ],
            )
            .await;
        assert_eq!(codes, vec![fail, fail, 0, 0], "{v:?}");
    }
    s.stop().await;
}

#[tokio::test]
async fn mqtt_4_7_3_4_matching_does_not_normalize_topics() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "norm", true)).await;
    // "Accounts" and precomposed "é" (U+00E9).
    sub.subscribe(
        1,
        vec![
            filter("norm/Accounts", QoS::AtMostOnce),
            filter("norm/\u{e9}", QoS::AtMostOnce),
        ],
    )
    .await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "norm-p", true)).await;
    // Case and Unicode normalization forms differ: no match. "e" + U+0301 is
    // canonically equivalent to U+00E9 but not the same characters.
    for t in [
        "norm/ACCOUNTS",
        "norm/accounts",
        "norm/e\u{301}",
        "norm/Accounts",
    ] {
        p.send(&Packet::Publish(publish(
            t,
            t.as_bytes(),
            QoS::AtMostOnce,
            0,
        )))
        .await;
    }
    p.sync().await;
    let got = sub.expect_publish().await;
    assert_eq!(got.topic.as_str(), "norm/Accounts");
    sub.expect_silence(300).await;
    s.stop().await;
}
