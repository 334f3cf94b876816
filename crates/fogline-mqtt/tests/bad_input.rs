//! Bad input costs only the connection that sent it: random bytes,
//! truncated packets and protocol violations on many connections, while a
//! well-behaved client keeps publishing and receiving.

mod common;

use std::time::Duration;

use common::*;
use fogline_mqtt::codec::{Packet, Version};

/// A small deterministic generator, so a failure can be replayed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u8 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u8
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_bytes_close_only_their_connection_mqtt_4_8_0_1() {
    let s = TestServer::start(|_| {}).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "good-sub", true)).await;
    sub.subscribe(1, vec![filter("good", QoS::AtLeastOnce)])
        .await;
    let (mut pubr, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "good-pub", true)).await;
    let mut rng = Lcg(0x5eed);
    for round in 0..64u16 {
        // Half the attackers connect properly first, then send garbage.
        let v = if round % 2 == 0 {
            Version::V4
        } else {
            Version::V5
        };
        let mut bad = if round % 4 < 2 {
            Raw::connect(&s.mqtt, connect_packet(v, &format!("bad{round}"), true))
                .await
                .0
        } else {
            Raw::open(&s.mqtt, v).await
        };
        let len = 1 + usize::from(rng.next()) * 4;
        let junk: Vec<u8> = (0..len).map(|_| rng.next()).collect();
        bad.send_raw(&junk).await;
        drop(bad);
        pubr.publish_qos1(publish(
            "good",
            &round.to_be_bytes(),
            QoS::AtLeastOnce,
            round + 1,
        ))
        .await;
        let got = sub.expect_publish().await;
        assert_eq!(&got.payload[..], &round.to_be_bytes());
        sub.send(&Packet::PubAck(Ack::ok(got.pkid))).await;
    }
    s.stop().await;
}

#[tokio::test]
async fn malformed_packets_get_the_prescribed_reason_code_mqtt_4_13_1_1() {
    let s = TestServer::start(|_| {}).await;
    // (bytes after CONNECT, the v5 reason code expected in the server's DISCONNECT)
    let cases: [(&[u8], u8); 5] = [
        (&[0x82, 0x03, 0x00, 0x01, 0x00], 0x82), // SUBSCRIBE without a filter [MQTT-3.8.3-2]
        (&[0x80, 0x06, 0x00, 0x01, 0x00, 0x00, 0x01, b'a'], 0x81), // SUBSCRIBE with flags 0 [MQTT-3.8.1-1]
        (&[0x36, 0x05, 0x00, 0x01, b'a', 0x00, 0x01], 0x81),       // PUBLISH QoS 3 [MQTT-3.3.1-4]
        (&[0x30, 0x05, 0x00, 0x02, 0xC3, 0x28, 0x00], 0x81), // ill-formed UTF-8 topic [MQTT-1.5.4-1]
        (&[0xF0, 0x00], 0x82), // AUTH without an authentication method
    ];
    for (bytes, reason) in cases {
        let (mut raw, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "m", true)).await;
        raw.send_raw(bytes).await;
        let got = raw.expect_close().await;
        assert!(
            matches!(got.last(), Some(Packet::Disconnect(d)) if d.reason == reason),
            "{bytes:02x?}: {got:?}"
        );
    }
    // A truncated packet followed by silence is not an error; the keep-alive ends it.
    let mut c = connect_packet(Version::V4, "half", true);
    c.keep_alive = 1;
    let (mut raw, _) = Raw::connect(&s.mqtt, c).await;
    raw.send_raw(&[0x30, 0x10, 0x00]).await;
    assert!(raw
        .recv_within(Duration::from_secs(4))
        .await
        .is_ok_and(|p| p.is_none()));
    s.stop().await;
}
