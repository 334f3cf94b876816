//! Answers owed when a protocol error ends a connection (issue 31, item 5).
//!
//! A client that breaks the protocol loses its connection [MQTT-4.13.1-1], not the answers
//! owed for the valid packets it sent before: every PUBACK, PUBREC and PUBCOMP is written, in
//! order, then (MQTT 5) the DISCONNECT with its reason, then the connection closes. Each client
//! writes its burst, the bad packet last, in one write and reads only then, so the server meets
//! the error with answers it has not written yet (under `fsync`, some of them still waiting for
//! their flush).

mod common;

use bytes::BytesMut;
use common::*;
use fogline_broker::StorageMode;
use fogline_mqtt::codec::{self, Packet, Version};

/// Valid packets before the bad one: many more answers than one write of the server carries.
const N: u16 = 1024;

/// An answer as the tests compare them: packet type, packet id, reason code.
type Answer = (&'static str, u16, u8);

/// A server keeping its data as `storage` says, whose Receive Maximum is `N`.
async fn server(storage: StorageMode) -> TestServer {
    TestServer::start_in(tempfile::tempdir().expect("tempdir"), |c| {
        c.broker.storage = storage;
        c.mqtt.receive_maximum = N;
    })
    .await
}

/// Sends `packets` in one write.
async fn send_burst(c: &mut Raw, packets: &[Packet]) {
    let mut b = BytesMut::new();
    for p in packets {
        codec::encode(p, c.version, &mut b).expect("encode");
    }
    c.send_raw(&b).await;
}

/// Reads until the server closes the connection and checks what came: the answers `owed`, in
/// order, then (MQTT 5) a DISCONNECT with `reason`, and nothing else. What differs is added to
/// `failures`, so a test reports every case it runs.
async fn expect_owed_then_close(
    c: &mut Raw,
    owed: &[Answer],
    reason: u8,
    case: &str,
    failures: &mut Vec<String>,
) {
    let got: Vec<Answer> = c
        .expect_close()
        .await
        .into_iter()
        .map(|p| match p {
            Packet::PubAck(a) => ("PUBACK", a.pkid, a.reason),
            Packet::PubRec(a) => ("PUBREC", a.pkid, a.reason),
            Packet::PubComp(a) => ("PUBCOMP", a.pkid, a.reason),
            Packet::Disconnect(d) => ("DISCONNECT", 0, d.reason),
            other => panic!("{case}: unexpected {other:?}"),
        })
        .collect();
    let mut want = owed.to_vec();
    if c.version == Version::V5 {
        want.push(("DISCONNECT", 0, reason));
    }
    let received = got.iter().filter(|a| a.0 != "DISCONNECT").count();
    let first_difference = got
        .iter()
        .zip(&want)
        .position(|(g, w)| g != w)
        .unwrap_or(got.len().min(want.len()));
    if got != want {
        failures.push(format!(
            "{case}: {received} answers received of {} owed, then {:?}; first difference at {}",
            owed.len(),
            got.last(),
            first_difference,
        ));
    }
}

fn assert_none(failures: &[String]) {
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

fn qos2_publishes(ids: std::ops::RangeInclusive<u16>) -> Vec<Packet> {
    ids.map(|i| Packet::Publish(publish("t", &i.to_be_bytes(), QoS::ExactlyOnce, i)))
        .collect()
}

/// (a) One QoS 2 PUBLISH past the server's Receive Maximum: the PUBRECs of the `N` before it,
/// then DISCONNECT 0x93 [MQTT-3.3.4-7].
#[tokio::test]
async fn issue_31_5_pubrecs_owed_before_receive_maximum_exceeded_are_sent() {
    let mut failures = Vec::new();
    for storage in [StorageMode::Memory, StorageMode::Fsync] {
        let s = server(storage).await;
        for v in [Version::V5, Version::V4] {
            let id = format!("rm-{v:?}");
            let (mut c, ack) = Raw::connect(&s.mqtt, connect_packet(v, &id, true)).await;
            if v == Version::V5 {
                assert_eq!(ack.props.receive_maximum, Some(N));
            }
            send_burst(&mut c, &qos2_publishes(1..=N + 1)).await;
            let owed: Vec<Answer> = (1..=N).map(|i| ("PUBREC", i, 0)).collect();
            let case = format!("{storage:?} {v:?} receive maximum exceeded");
            expect_owed_then_close(&mut c, &owed, 0x93, &case, &mut failures).await;
        }
        s.stop().await;
    }
    assert_none(&failures);
}

/// (b) A second CONNECT after QoS 1 and QoS 2 PUBLISHes: their PUBACKs and PUBRECs, then
/// DISCONNECT 0x82 [MQTT-3.1.0-2].
#[tokio::test]
async fn issue_31_5_answers_owed_before_a_second_connect_are_sent() {
    let mut failures = Vec::new();
    for storage in [StorageMode::Memory, StorageMode::Fsync] {
        let s = server(storage).await;
        for v in [Version::V5, Version::V4] {
            let id = format!("twice-{v:?}");
            let (mut c, _) = Raw::connect(&s.mqtt, connect_packet(v, &id, true)).await;
            let qos = |i: u16| {
                if i % 2 == 1 {
                    QoS::AtLeastOnce
                } else {
                    QoS::ExactlyOnce
                }
            };
            let mut burst: Vec<Packet> = (1..=N)
                .map(|i| Packet::Publish(publish("t", &i.to_be_bytes(), qos(i), i)))
                .collect();
            burst.push(Packet::Connect(Box::new(connect_packet(v, &id, true))));
            send_burst(&mut c, &burst).await;
            let owed: Vec<Answer> = (1..=N)
                .map(|i| match qos(i) {
                    QoS::AtLeastOnce => ("PUBACK", i, 0),
                    _ => ("PUBREC", i, 0),
                })
                .collect();
            let case = format!("{storage:?} {v:?} second CONNECT");
            expect_owed_then_close(&mut c, &owed, 0x82, &case, &mut failures).await;
        }
        s.stop().await;
    }
    assert_none(&failures);
}

/// (c) PUBRELs, then a packet only a server sends: their PUBCOMPs, then DISCONNECT 0x82.
#[tokio::test]
async fn issue_31_5_pubcomps_owed_before_a_protocol_error_are_sent() {
    let mut failures = Vec::new();
    let s = server(StorageMode::Memory).await;
    for v in [Version::V5, Version::V4] {
        let id = format!("rel-{v:?}");
        let (mut c, _) = Raw::connect(&s.mqtt, connect_packet(v, &id, true)).await;
        send_burst(&mut c, &qos2_publishes(1..=N)).await;
        for i in 1..=N {
            match c.recv().await {
                Some(Packet::PubRec(a)) if a.pkid == i && a.reason == 0 => {}
                other => panic!("{v:?}: expected PUBREC {i}, got {other:?}"),
            }
        }
        let mut burst: Vec<Packet> = (1..=N).map(|i| Packet::PubRel(Ack::ok(i))).collect();
        burst.push(Packet::PingResp);
        send_burst(&mut c, &burst).await;
        let owed: Vec<Answer> = (1..=N).map(|i| ("PUBCOMP", i, 0)).collect();
        let case = format!("{v:?} PUBRELs then PINGRESP");
        expect_owed_then_close(&mut c, &owed, 0x82, &case, &mut failures).await;
    }
    s.stop().await;
    assert_none(&failures);
}

/// A client with a small receive buffer takes the answers only as it reads them, so most are
/// still in the server's send buffer when the connection ends. Closing a socket whose peer's
/// bytes are unread resets the connection and discards them: the server reads what the client
/// still sends until it closes (within a bound) instead.
#[tokio::test]
async fn issue_31_5_owed_answers_reach_a_client_with_a_small_receive_buffer() {
    let mut failures = Vec::new();
    let s = server(StorageMode::Memory).await;
    for v in [Version::V5, Version::V4] {
        let sock = tokio::net::TcpSocket::new_v4().expect("socket");
        sock.set_recv_buffer_size(2048).expect("SO_RCVBUF");
        let sock = sock
            .connect(s.mqtt.parse().expect("address"))
            .await
            .expect("connect");
        let id = format!("narrow-{v:?}");
        let (mut c, _) = Raw::connect_on(sock, connect_packet(v, &id, true)).await;
        send_burst(&mut c, &qos2_publishes(1..=N + 1)).await;
        let owed: Vec<Answer> = (1..=N).map(|i| ("PUBREC", i, 0)).collect();
        let case = format!("{v:?} small receive buffer");
        expect_owed_then_close(&mut c, &owed, 0x93, &case, &mut failures).await;
    }
    s.stop().await;
    assert_none(&failures);
}

/// A 3.1.1 connection refuses a message by ending (3.1.1 has no refusal code) [MQTT-3.3.5-2]:
/// the PUBACK of the message before it is sent, and none of those after it, as they would
/// overtake the one it never gets (acknowledgements go in the order received). Under `fsync`
/// all of them wait for their flush, so the refusal meets them still unanswered.
#[tokio::test]
async fn issue_31_5_a_v311_refusal_ends_the_answers_in_order() {
    let mut failures = Vec::new();
    let s = TestServer::start_in(tempfile::tempdir().expect("tempdir"), |c| {
        c.broker.storage = StorageMode::Fsync;
        c.broker.max_message_bytes = bytesize::ByteSize::kib(1);
    })
    .await;
    let (mut c, _) = Raw::connect(&s.mqtt, connect_packet(Version::V4, "refused", true)).await;
    let mut burst = vec![
        Packet::Publish(publish("t", b"fits", QoS::AtLeastOnce, 1)),
        Packet::Publish(publish("t", &[7u8; 4096], QoS::AtLeastOnce, 2)),
    ];
    burst.extend(
        (3..=100u16).map(|i| Packet::Publish(publish("t", &i.to_be_bytes(), QoS::AtLeastOnce, i))),
    );
    send_burst(&mut c, &burst).await;
    let owed = [("PUBACK", 1, 0)];
    expect_owed_then_close(&mut c, &owed, 0, "V4 refusal", &mut failures).await;
    s.stop().await;
    assert_none(&failures);
}
