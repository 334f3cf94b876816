//! MQTT restart test: persistent sessions with QoS 1 and QoS 2 messages in
//! flight in both directions, the real `fogline serve` (storage `mmap`)
//! killed with SIGKILL, restarted on the same data directory; the clients
//! reconnect and nothing acknowledged is lost, QoS 2 is delivered exactly
//! once (MQTT-4.3.3, MQTT-4.4.0-1, MQTT-3.1.2-4/5 with session state kept
//! across the restart), and a retained message survives as well.

mod support;

use std::collections::HashMap;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use fogline_mqtt::codec::{
    decode, encode, Ack, Connect, Filter, Packet, Properties, Publish, QoS, Subscribe, Version,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WAIT: Duration = Duration::from_secs(10);

fn start(dir: &std::path::Path) -> support::Served {
    support::serve([std::ffi::OsStr::new("--data-dir"), dir.as_os_str()])
}

struct Mqtt {
    sock: TcpStream,
    v: Version,
    buf: BytesMut,
}

impl Mqtt {
    async fn connect(addr: &str, v: Version, id: &str, receive_max: Option<u16>) -> (Mqtt, bool) {
        let sock = TcpStream::connect(addr).await.expect("connect");
        let mut m = Mqtt {
            sock,
            v,
            buf: BytesMut::new(),
        };
        let props = Properties {
            session_expiry: Some(3600),
            receive_maximum: receive_max,
            ..Properties::default()
        };
        let c = Connect {
            version: v,
            clean_start: false,
            keep_alive: 60,
            client_id: id.into(),
            will: None,
            username: None,
            password: None,
            props: if v == Version::V5 {
                props.into()
            } else {
                Properties::default().into()
            },
        };
        m.send(Packet::Connect(Box::new(c))).await;
        match m.recv().await {
            Packet::ConnAck(a) => {
                assert_eq!(a.code, 0);
                (m, a.session_present)
            }
            other => panic!("expected CONNACK, got {other:?}"),
        }
    }

    async fn send(&mut self, p: Packet) {
        let mut b = BytesMut::new();
        encode(&p, self.v, &mut b).expect("encode");
        self.sock.write_all(&b).await.expect("write");
    }

    async fn recv(&mut self) -> Packet {
        self.try_recv(WAIT).await.expect("a packet in time")
    }

    async fn try_recv(&mut self, t: Duration) -> Option<Packet> {
        let deadline = tokio::time::Instant::now() + t;
        loop {
            if let Some(p) = decode(&mut self.buf, self.v, usize::MAX).expect("valid packet") {
                return Some(p);
            }
            match tokio::time::timeout_at(deadline, self.sock.read_buf(&mut self.buf)).await {
                Ok(Ok(n)) if n > 0 => {}
                Ok(_) => panic!("connection closed"),
                Err(_) => return None,
            }
        }
    }
}

fn msg(topic: &str, qos: QoS, pkid: u16, body: String) -> Packet {
    Packet::Publish(Publish {
        dup: false,
        qos,
        retain: false,
        topic: topic.into(),
        pkid,
        props: Default::default(),
        payload: Bytes::from(body),
    })
}

#[tokio::test]
async fn mqtt_sessions_and_inflight_qos1_qos2_survive_sigkill() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = start(dir.path());
    let addr = server.mqtt.clone();
    // Two persistent subscribers (3.1.1 and 5.0, the latter with receive maximum 4 so
    // messages also wait in the session's queue) and a persistent publisher.
    let mut subs = Vec::new();
    for (v, id) in [(Version::V4, "keeper4"), (Version::V5, "keeper5")] {
        let (mut s, present) = Mqtt::connect(&addr, v, id, Some(4)).await;
        assert!(!present);
        let f = Filter {
            filter: "k/#".into(),
            qos: QoS::ExactlyOnce,
            no_local: false,
            retain_as_published: false,
            retain_handling: 0,
        };
        s.send(Packet::Subscribe(Subscribe {
            pkid: 1,
            props: Default::default(),
            filters: vec![f],
        }))
        .await;
        assert!(matches!(s.recv().await, Packet::SubAck(_)));
        subs.push(s);
    }
    let (mut p, _) = Mqtt::connect(&addr, Version::V5, "producer", None).await;
    // 10 QoS 1 and 10 QoS 2 messages, all acknowledged (QoS 2 completed) ...
    for i in 1..=10u16 {
        p.send(msg("k/one", QoS::AtLeastOnce, i, format!("q1-{i}")))
            .await;
        assert!(matches!(p.recv().await, Packet::PubAck(a) if a.pkid == i));
        let id = 100 + i;
        p.send(msg("k/two", QoS::ExactlyOnce, id, format!("q2-{i}")))
            .await;
        assert!(matches!(p.recv().await, Packet::PubRec(a) if a.pkid == id));
        p.send(Packet::PubRel(Ack::ok(id))).await;
        assert!(matches!(p.recv().await, Packet::PubComp(a) if a.pkid == id));
    }
    // A retained message (on a topic the keepers do not match) must survive too.
    let Packet::Publish(mut retained) = msg("status/door", QoS::AtLeastOnce, 600, "open".into())
    else {
        unreachable!()
    };
    retained.retain = true;
    p.send(Packet::Publish(retained)).await;
    assert!(matches!(p.recv().await, Packet::PubAck(a) if a.pkid == 600));
    // ... and one QoS 2 message received by the server (PUBREC) but not released.
    p.send(msg("k/two", QoS::ExactlyOnce, 500, "q2-unreleased".into()))
        .await;
    assert!(matches!(p.recv().await, Packet::PubRec(a) if a.pkid == 500));
    // Each subscriber takes what arrives: acks the first QoS 1 message, PUBRECs the
    // first QoS 2 message (so only PUBREL is owed), leaves the rest in flight.
    let mut delivered: Vec<HashMap<String, u32>> = vec![HashMap::new(), HashMap::new()];
    for (s, seen) in subs.iter_mut().zip(&mut delivered) {
        let mut acked1 = false;
        let mut rec2 = false;
        while let Some(pkt) = s.try_recv(Duration::from_millis(500)).await {
            let Packet::Publish(m) = pkt else { continue };
            let body = String::from_utf8_lossy(&m.payload).into_owned();
            match m.qos {
                QoS::AtLeastOnce if !acked1 => {
                    acked1 = true;
                    *seen.entry(body).or_default() += 1;
                    s.send(Packet::PubAck(Ack::ok(m.pkid))).await;
                }
                QoS::ExactlyOnce if !rec2 => {
                    rec2 = true;
                    *seen.entry(body).or_default() += 1;
                    s.send(Packet::PubRec(Ack::ok(m.pkid))).await;
                }
                _ => {} // in flight at the crash; a QoS 2 one is counted when redelivered
            }
        }
        assert!(acked1 && rec2);
    }
    server.kill();
    drop(subs);
    drop(p);

    let mut server = start(dir.path());
    let addr = server.mqtt.clone();
    // The publisher: its unreleased QoS 2 id is remembered; a resent PUBLISH (as
    // a client unsure of the PUBREC would send) is not forwarded twice.
    let (mut p, present) = Mqtt::connect(&addr, Version::V5, "producer", None).await;
    assert!(present, "the publisher's session survived");
    let Packet::Publish(Publish { payload, .. }) =
        msg("k/two", QoS::ExactlyOnce, 500, "q2-unreleased".into())
    else {
        unreachable!()
    };
    p.send(Packet::Publish(Publish {
        dup: true,
        qos: QoS::ExactlyOnce,
        retain: false,
        topic: "k/two".into(),
        pkid: 500,
        props: Default::default(),
        payload,
    }))
    .await;
    assert!(matches!(p.recv().await, Packet::PubRec(a) if a.pkid == 500));
    p.send(Packet::PubRel(Ack::ok(500))).await;
    assert!(
        matches!(p.recv().await, Packet::PubComp(a) if a.pkid == 500 && a.reason == 0),
        "the id was known"
    );
    for (i, (v, id)) in [(Version::V4, "keeper4"), (Version::V5, "keeper5")]
        .into_iter()
        .enumerate()
    {
        let (mut s, present) = Mqtt::connect(&addr, v, id, Some(4)).await;
        assert!(present, "{id}: the session survived");
        let seen = &mut delivered[i];
        while let Some(pkt) = s.try_recv(Duration::from_millis(1500)).await {
            match pkt {
                Packet::Publish(m) => {
                    let body = String::from_utf8_lossy(&m.payload).into_owned();
                    *seen.entry(body).or_default() += 1;
                    match m.qos {
                        QoS::ExactlyOnce => s.send(Packet::PubRec(Ack::ok(m.pkid))).await,
                        _ => s.send(Packet::PubAck(Ack::ok(m.pkid))).await,
                    }
                }
                Packet::PubRel(a) => s.send(Packet::PubComp(Ack::ok(a.pkid))).await,
                other => panic!("unexpected {other:?}"),
            }
        }
        for n in 1..=10 {
            assert!(
                seen.get(&format!("q1-{n}")).copied().unwrap_or(0) >= 1,
                "{id}: q1-{n} lost"
            );
            assert_eq!(
                seen.get(&format!("q2-{n}")).copied(),
                Some(1),
                "{id}: q2-{n} not exactly once"
            );
        }
        assert_eq!(
            seen.get("q2-unreleased").copied(),
            Some(1),
            "{id}: the unreleased QoS 2 message exactly once"
        );
    }
    // The retained message was kept across the restart.
    let f = Filter {
        filter: "status/#".into(),
        qos: QoS::AtLeastOnce,
        no_local: false,
        retain_as_published: false,
        retain_handling: 0,
    };
    p.send(Packet::Subscribe(Subscribe {
        pkid: 2,
        props: Default::default(),
        filters: vec![f],
    }))
    .await;
    assert!(matches!(p.recv().await, Packet::SubAck(_)));
    match p.recv().await {
        Packet::Publish(m) => assert_eq!((&m.payload[..], m.retain), (&b"open"[..], true)),
        other => panic!("expected the retained message, got {other:?}"),
    }
    server.kill();
}

/// The one gap the journal had: a durable session that is online and holds `max_queued`
/// messages (its client takes one and never acknowledges it) leaves the rest in its broker
/// queue; MQTT and native publishers are acknowledged meanwhile. After a SIGKILL every
/// acknowledged message still reaches the session: each was journaled as it was routed.
#[tokio::test]
async fn messages_queued_past_a_full_online_session_survive_sigkill() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("fogline.toml"), "[mqtt]\nmax_queued = 2\n").expect("config");
    let start = |dir: &std::path::Path| {
        support::serve([
            std::ffi::OsStr::new("--config"),
            dir.join("fogline.toml").as_os_str(),
            std::ffi::OsStr::new("--data-dir"),
            dir.join("data").as_os_str(),
        ])
    };
    let mut served = start(dir.path());
    let (mut s, _) = Mqtt::connect(&served.mqtt, Version::V5, "slow", Some(1)).await;
    s.send(Packet::Subscribe(Subscribe {
        pkid: 1,
        props: Default::default(),
        filters: vec![Filter {
            filter: "full/#".into(),
            qos: QoS::AtLeastOnce,
            no_local: false,
            retain_as_published: false,
            retain_handling: 0,
        }],
    }))
    .await;
    assert!(matches!(s.recv().await, Packet::SubAck(_)));
    let (mut p, _) = Mqtt::connect(&served.mqtt, Version::V5, "fast", None).await;
    for i in 1..=20u16 {
        p.send(msg("full/mqtt", QoS::AtLeastOnce, i, format!("m-{i}")))
            .await;
        assert!(matches!(p.recv().await, Packet::PubAck(a) if a.pkid == i && a.reason == 0));
    }
    let mut native = TcpStream::connect(&served.native).await.expect("native");
    let mut nbuf = BytesMut::new();
    let mut frames = vec![fogline_wire::Frame::Hello {
        version: 1,
        client_name: "gap".into(),
        credentials: None,
    }];
    for i in 1..=20u64 {
        let body = format!("n-{i}");
        let block = fogline_wire::RecordBlock::from_records([(0u64, &b""[..], body.as_bytes())])
            .expect("block");
        frames.push(fogline_wire::Frame::Publish {
            request_id: i,
            flags: 0,
            topic: "full/native".into(),
            records: block,
        });
    }
    for f in &frames {
        let mut b = BytesMut::new();
        fogline_wire::encode(f, &mut b).expect("encode");
        native.write_all(&b).await.expect("write");
    }
    let mut acked = 0;
    while acked < 20 {
        match fogline_wire::decode(&mut nbuf, u32::MAX).expect("valid frame") {
            Some(fogline_wire::Frame::HelloOk { .. }) => {}
            Some(fogline_wire::Frame::PubAck { count: 1, .. }) => acked += 1,
            Some(other) => panic!("expected PubAck, got {other:?}"),
            None => {
                let read = tokio::time::timeout(WAIT, native.read_buf(&mut nbuf)).await;
                assert!(matches!(read, Ok(Ok(n)) if n > 0), "native acks in time");
            }
        }
    }
    // The slow client took the first message only (receive maximum 1, never acknowledged).
    assert!(matches!(s.recv().await, Packet::Publish(m) if &m.payload[..] == b"m-1"));
    assert!(s.try_recv(Duration::from_millis(300)).await.is_none());
    served.kill();

    let mut served = start(dir.path());
    let (mut s, present) = Mqtt::connect(&served.mqtt, Version::V5, "slow", Some(100)).await;
    assert!(present, "the session survived");
    let mut seen = HashMap::<String, u32>::new();
    while let Some(pkt) = s.try_recv(Duration::from_millis(1500)).await {
        let Packet::Publish(m) = pkt else {
            panic!("expected PUBLISH, got {pkt:?}");
        };
        *seen
            .entry(String::from_utf8_lossy(&m.payload).into_owned())
            .or_default() += 1;
        s.send(Packet::PubAck(Ack::ok(m.pkid))).await;
    }
    for i in 1..=20 {
        for body in [format!("m-{i}"), format!("n-{i}")] {
            assert_eq!(seen.get(&body), Some(&1), "{body}: once after the restart");
        }
    }
    assert_eq!(seen.len(), 40, "nothing else: {seen:?}");
    served.kill();
}
