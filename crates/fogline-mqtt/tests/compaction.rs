//! The journal of durable MQTT state is compacted while the node runs: a persistent session
//! that receives a long stream does not grow `state.log` without bound, and what the journal
//! holds after compactions restores the same sessions and retained messages.

mod common;

use std::time::Duration;

use common::*;
use fogline_mqtt::codec::{Packet, Version};

fn persistent(id: &str, clean: bool) -> fogline_mqtt::codec::Connect {
    let mut c = connect_packet(Version::V5, id, clean);
    c.props.session_expiry = Some(600);
    c
}

fn journal_len(s: &TestServer) -> u64 {
    std::fs::metadata(s.dir.path().join("mqtt").join("state.log"))
        .map(|m| m.len())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_stream_to_a_persistent_session_keeps_the_journal_small_and_whole() {
    const LIMIT: u64 = 64 * 1024;
    let tune = |c: &mut common::Config| c.mqtt.state_compact_size = bytesize::ByteSize::b(LIMIT);
    let s = TestServer::start_in(tempfile::tempdir().expect("tempdir"), tune).await;
    let (mut sub, _) = Raw::connect(&s.mqtt, persistent("c-sub", true)).await;
    sub.subscribe(1, vec![filter("c/t", QoS::AtLeastOnce)])
        .await;
    let (mut p, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "c-pub", true)).await;
    let mut kept = publish("c/kept", b"retained", QoS::AtLeastOnce, 1);
    kept.retain = true;
    p.publish_qos1(kept).await;
    // About 1.1 KiB of journal per message (put, sent, deleted): 600 of them are ten times
    // the compaction size.
    let body = vec![b'x'; 1024];
    let mut largest = 0;
    // Compaction runs on its own thread and starts on an append: on a busy machine it may
    // trail the writer for a while, so the stream goes on (up to 3,000 more messages) until
    // the journal is back under the bound. Without compaction 600 messages alone journal
    // about 660 KiB, over twice the bound, and it only grows.
    let started = std::time::Instant::now();
    for i in 0..3600u16 {
        if i >= 600 && journal_len(&s) < 4 * LIMIT {
            break;
        }
        assert!(
            i < 3599 && started.elapsed() < Duration::from_secs(120),
            "state.log stays at {} bytes (largest {largest}) after {i} messages",
            journal_len(&s)
        );
        p.publish_qos1(publish("c/t", &body, QoS::AtLeastOnce, i % 600 + 2))
            .await;
        let m = sub.expect_publish().await;
        sub.send(&Packet::PubAck(Ack::ok(m.pkid))).await;
        largest = largest.max(journal_len(&s));
    }
    sub.sync().await;
    // Five messages queue for the session while it is away.
    drop(sub);
    tokio::time::sleep(Duration::from_millis(100)).await;
    for i in 0..5u16 {
        p.publish_qos1(publish(
            "c/t",
            format!("away {i}").as_bytes(),
            QoS::AtLeastOnce,
            700 + i,
        ))
        .await;
    }
    let dir = s.stop().await;
    let s = TestServer::start_in(dir, tune).await;
    let (mut sub, ack) = Raw::connect(&s.mqtt, persistent("c-sub", false)).await;
    assert!(ack.session_present);
    for i in 0..5u16 {
        let m = sub.expect_publish().await;
        assert_eq!(m.payload[..], *format!("away {i}").as_bytes());
        sub.send(&Packet::PubAck(Ack::ok(m.pkid))).await;
    }
    sub.expect_silence(200).await;
    let (mut other, _) = Raw::connect(&s.mqtt, connect_packet(Version::V5, "other", true)).await;
    other
        .subscribe(1, vec![filter("c/kept", QoS::AtMostOnce)])
        .await;
    assert_eq!(&other.expect_publish().await.payload[..], b"retained");
    s.stop().await;
}
