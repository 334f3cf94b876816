//! The ACL matrix: for each of a few users, every operation (publish, subscribe, consume,
//! replay, interest, admin) on a topic or stream it may use and on one it may not (and
//! another user's durable consumer), over the native protocol and over MQTT 5, against a real `fogline serve` with `[auth]`
//! `password_file` and `acl_file` (and the admin API over HTTP).

mod support;

use std::path::Path;
use std::time::Duration;

use bytes::BytesMut;
use fogline_wire::{Credentials, ErrorCode, Frame, StartPosition, StreamSpec, NODE_DEFAULT};
use rumqttc::v5::mqttbytes::v5::{Packet, PubAckReason, SubscribeReasonCode};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, EventLoop, MqttOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const ACL: &str = "\
# anonymous clients: nothing
user alice
topic readwrite site/a/#
topic deny site/a/secret
user bob
topic write site/b/#
topic read site/a/#
topic read $fogline/admin/#
user root
topic readwrite #
topic readwrite $fogline/admin/#
";

const USERS: [(&str, &str); 3] = [("alice", "a-pw"), ("bob", "b-pw"), ("root", "r-pw")];

fn serve(dir: &Path) -> support::Served {
    let mut users = fogline_auth::passwd::PasswordFile::new();
    for (u, p) in USERS {
        // Few iterations: the test is about who may do what, not the hash's cost.
        users.set(u, p.as_bytes(), 1000).unwrap();
    }
    let passwd = dir.join("passwd");
    users.save(&passwd).unwrap();
    let acl = dir.join("acl");
    std::fs::write(&acl, ACL).unwrap();
    let cfg = dir.join("fogline.toml");
    let text = format!(
        "[auth]\npassword_file = {passwd:?}\nacl_file = {acl:?}\n\n\
         [[broker.streams]]\nname = \"sa\"\nsubjects = [\"site/a/#\"]\n\n\
         [[broker.streams]]\nname = \"sb\"\nsubjects = [\"site/b/#\"]\n\n\
         [[broker.streams]]\nname = \"all\"\nsubjects = [\"#\"]\n"
    );
    std::fs::write(&cfg, text).unwrap();
    let data = dir.join("data");
    support::serve([
        "--config".as_ref(),
        cfg.as_os_str(),
        "--data-dir".as_ref(),
        data.as_os_str(),
    ])
}

/// A native connection driven frame by frame.
struct Native {
    sock: TcpStream,
    buf: BytesMut,
    next: u64,
}

impl Native {
    /// Connects and logs in; the Error frame when the server refuses.
    async fn login(addr: &str, user: Option<(&str, &str)>) -> Result<Native, Frame> {
        let sock = TcpStream::connect(addr).await.unwrap();
        let mut n = Native {
            sock,
            buf: BytesMut::new(),
            next: 1,
        };
        n.send(Frame::Hello {
            version: 1,
            client_name: "matrix".into(),
            credentials: user.map(|(u, p)| Credentials {
                username: u.into(),
                password: p.into(),
            }),
        })
        .await;
        match n.recv().await {
            Frame::HelloOk { .. } => Ok(n),
            other => Err(other),
        }
    }

    async fn send(&mut self, f: Frame) {
        let mut b = BytesMut::new();
        fogline_wire::encode(&f, &mut b).unwrap();
        self.sock.write_all(&b).await.unwrap();
    }

    async fn recv(&mut self) -> Frame {
        loop {
            if let Some(f) = fogline_wire::decode(&mut self.buf, u32::MAX).unwrap() {
                return f;
            }
            let read =
                tokio::time::timeout(Duration::from_secs(20), self.sock.read_buf(&mut self.buf))
                    .await
                    .expect("an answer in time")
                    .unwrap();
            assert!(read > 0, "connection closed");
        }
    }

    fn id(&mut self) -> u64 {
        self.next += 1;
        self.next
    }

    /// Sends `f` and returns the error code of its answer (`None`: accepted).
    async fn ask(&mut self, f: Frame) -> Option<ErrorCode> {
        self.send(f).await;
        match self.recv().await {
            Frame::Error { code, .. } => Some(code),
            _ => None,
        }
    }

    async fn publish(&mut self, topic: &str) -> Option<ErrorCode> {
        let request_id = self.id();
        let mut b = BytesMut::new();
        let mut w = fogline_wire::encode_publish_header(&mut b, request_id, 0, topic).unwrap();
        w.push(&mut b, 0, b"", b"x").unwrap();
        self.sock.write_all(&b).await.unwrap();
        match self.recv().await {
            Frame::Error { code, .. } => Some(code),
            Frame::PubAck { .. } => None,
            other => panic!("{other:?}"),
        }
    }

    async fn subscribe(&mut self, filter: &str, interest: Option<&str>) -> Option<ErrorCode> {
        let sub_id = self.id() as u32;
        let f = match interest {
            None => Frame::Subscribe {
                sub_id,
                flags: 0,
                filter: filter.into(),
            },
            Some(i) => Frame::SubscribeProfile {
                sub_id,
                flags: 0,
                filter: filter.into(),
                interest: i.into(),
            },
        };
        self.ask(f).await
    }

    /// A durable consumer (`name`) or a replay from the start (no name).
    async fn consume(&mut self, stream: &str, name: &str, filter: &str) -> Option<ErrorCode> {
        let request_id = self.id();
        self.ask(Frame::ConsumerOpen {
            request_id,
            stream: stream.into(),
            name: name.into(),
            filter: filter.into(),
            start: StartPosition::Earliest,
            ack_timeout_ms: 0,
            max_inflight: 0,
            push_credit: 0,
        })
        .await
    }

    async fn announce(&mut self, topic: &str) -> Option<ErrorCode> {
        let request_id = self.id();
        self.ask(Frame::Announce {
            request_id,
            topic: topic.into(),
            profile: "kind=temp".into(),
        })
        .await
    }

    async fn list_streams(&mut self) -> Option<ErrorCode> {
        let request_id = self.id();
        self.ask(Frame::StreamList { request_id }).await
    }

    async fn create_stream(&mut self, name: &str) -> Option<ErrorCode> {
        let request_id = self.id();
        self.ask(Frame::StreamCreate {
            request_id,
            spec: StreamSpec {
                name: name.into(),
                storage: None,
                subjects: vec![format!("made/{name}/#").into()],
                retention_bytes: NODE_DEFAULT,
                retention_age_ms: NODE_DEFAULT,
                segment_bytes: NODE_DEFAULT,
            },
        })
        .await
    }
}

const DENIED: Option<ErrorCode> = Some(ErrorCode::NotAuthorized);

#[tokio::test]
async fn every_operation_over_the_native_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path());
    let addr = s.native.clone();

    // Logins: a wrong password, an unknown user and an anonymous client are refused.
    for bad in [Some(("alice", "nope")), Some(("mallory", "x")), None] {
        match Native::login(&addr, bad).await {
            Err(Frame::Error { code, .. }) => assert_eq!(code, ErrorCode::BadCredentials),
            Err(other) => panic!("{bad:?}: {other:?}"),
            Ok(_) => panic!("{bad:?} was let in"),
        }
    }
    let mut alice = Native::login(&addr, Some(USERS[0])).await.unwrap();
    let mut bob = Native::login(&addr, Some(USERS[1])).await.unwrap();
    let mut root = Native::login(&addr, Some(USERS[2])).await.unwrap();

    // Publish.
    assert_eq!(alice.publish("site/a/t").await, None);
    assert_eq!(alice.publish("site/a/secret").await, DENIED);
    assert_eq!(alice.publish("site/b/t").await, DENIED);
    assert_eq!(bob.publish("site/b/t").await, None);
    assert_eq!(bob.publish("site/a/t").await, DENIED);
    assert_eq!(root.publish("anything/t").await, None);

    // Subscribe, and subscribe by interest.
    assert_eq!(alice.subscribe("site/a/#", None).await, None);
    assert_eq!(alice.subscribe("site/#", None).await, DENIED);
    assert_eq!(alice.subscribe("site/b/t", None).await, DENIED);
    assert_eq!(bob.subscribe("site/a/+", None).await, None);
    assert_eq!(bob.subscribe("site/b/#", None).await, DENIED, "write only");
    assert_eq!(alice.subscribe("site/a/#", Some("kind=temp")).await, None);
    assert_eq!(alice.subscribe("site/b/#", Some("kind=temp")).await, DENIED);

    // Announcing a producer asks the right to publish.
    assert_eq!(bob.announce("site/b/x").await, None);
    assert_eq!(alice.announce("site/b/x").await, DENIED);

    // Durable consumers and replays: a stream is read by whoever may read its subjects
    // (or the consumer's narrower filter).
    assert_eq!(alice.consume("sa", "alice-c", "").await, None);
    assert_eq!(alice.consume("sb", "alice-c2", "").await, DENIED);
    assert_eq!(alice.consume("sb", "", "").await, DENIED, "replay");
    assert_eq!(alice.consume("all", "", "").await, DENIED, "replay of #");
    assert_eq!(alice.consume("all", "", "site/a/t").await, None);
    assert_eq!(bob.consume("sa", "", "").await, None);
    assert_eq!(bob.consume("sb", "", "").await, DENIED, "write only");
    assert_eq!(root.consume("all", "", "").await, None);
    // A durable consumer is its first user's: bob and root may read the stream, not take
    // alice's consumer (as an MQTT session is not taken over by another user).
    assert_eq!(bob.consume("sa", "alice-c", "").await, DENIED);
    assert_eq!(root.consume("sa", "alice-c", "").await, DENIED);
    assert_eq!(bob.consume("sa", "bob-c", "").await, None);

    // Administration: bob may look, root may change, alice may do neither.
    assert_eq!(alice.list_streams().await, DENIED);
    assert_eq!(bob.list_streams().await, None);
    assert_eq!(bob.create_stream("x").await, DENIED);
    assert_eq!(alice.create_stream("x").await, DENIED);
    assert_eq!(root.create_stream("x").await, None);

    // Reading: alice's subscription gets site/a/t but not site/a/secret, which root may
    // publish and alice may not read.
    let mut reader = Native::login(&addr, Some(USERS[0])).await.unwrap();
    assert_eq!(reader.subscribe("site/a/#", None).await, None);
    assert_eq!(root.publish("site/a/secret").await, None);
    assert_eq!(root.publish("site/a/open").await, None);
    match reader.recv().await {
        Frame::Deliver { topic, .. } => assert_eq!(topic.as_str(), "site/a/open"),
        other => panic!("{other:?}"),
    }

    // Each refusal was counted (three publishes and an announcement).
    let metrics =
        support::admin_get_auth(s.http.as_deref().unwrap(), "/metrics", Some(USERS[2])).await;
    assert!(
        metrics.contains("fogline_auth_failures_total 3.0"),
        "{metrics}"
    );
    assert!(
        metrics.contains("fogline_acl_denials_total{operation=\"publish\"} 4.0"),
        "{metrics}"
    );
}

/// An MQTT 5 client logged in as `user`, with its event loop.
async fn mqtt(addr: &str, id: &str, user: (&str, &str)) -> (AsyncClient, EventLoop) {
    let (host, port) = addr.rsplit_once(':').unwrap();
    let mut o = MqttOptions::new(id, host, port.parse().unwrap());
    o.set_credentials(user.0, user.1);
    o.set_keep_alive(Duration::from_secs(30));
    let (c, mut ev) = AsyncClient::new(o, 64);
    loop {
        if let Event::Incoming(Packet::ConnAck(_)) = next(&mut ev).await {
            break;
        }
    }
    (c, ev)
}

async fn next(ev: &mut EventLoop) -> Event {
    tokio::time::timeout(Duration::from_secs(20), ev.poll())
        .await
        .expect("an event in time")
        .expect("the connection works")
}

/// PUBACK's reason for a QoS 1 publish.
async fn publish(c: &AsyncClient, ev: &mut EventLoop, topic: &str) -> PubAckReason {
    c.publish(topic, QoS::AtLeastOnce, false, "x")
        .await
        .unwrap();
    loop {
        if let Event::Incoming(Packet::PubAck(a)) = next(ev).await {
            return a.reason;
        }
    }
}

/// SUBACK's code for one filter.
async fn subscribe(c: &AsyncClient, ev: &mut EventLoop, filter: &str) -> SubscribeReasonCode {
    c.subscribe(filter, QoS::AtLeastOnce).await.unwrap();
    loop {
        if let Event::Incoming(Packet::SubAck(a)) = next(ev).await {
            return a.return_codes[0];
        }
    }
}

#[tokio::test]
async fn every_operation_over_mqtt() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path());
    let (alice, mut a_ev) = mqtt(&s.mqtt, "alice-1", USERS[0]).await;
    let (bob, mut b_ev) = mqtt(&s.mqtt, "bob-1", USERS[1]).await;
    let (root, mut r_ev) = mqtt(&s.mqtt, "root-1", USERS[2]).await;
    let ok = PubAckReason::Success;
    let no_subscribers = PubAckReason::NoMatchingSubscribers;
    let published = |r: PubAckReason| r == ok || r == no_subscribers;

    assert!(published(publish(&alice, &mut a_ev, "site/a/t").await));
    assert_eq!(
        publish(&alice, &mut a_ev, "site/b/t").await,
        PubAckReason::NotAuthorized
    );
    assert_eq!(
        publish(&alice, &mut a_ev, "site/a/secret").await,
        PubAckReason::NotAuthorized
    );
    assert!(published(publish(&bob, &mut b_ev, "site/b/t").await));
    assert_eq!(
        publish(&bob, &mut b_ev, "site/a/t").await,
        PubAckReason::NotAuthorized
    );

    let granted = |c: SubscribeReasonCode| matches!(c, SubscribeReasonCode::Success(_));
    assert!(granted(subscribe(&alice, &mut a_ev, "site/a/#").await));
    assert_eq!(
        subscribe(&alice, &mut a_ev, "site/#").await,
        SubscribeReasonCode::NotAuthorized
    );
    assert_eq!(
        subscribe(&bob, &mut b_ev, "site/b/#").await,
        SubscribeReasonCode::NotAuthorized,
        "write only"
    );
    assert!(granted(subscribe(&bob, &mut b_ev, "site/a/+").await));

    // Messages alice may not read never reach her subscription.
    assert!(published(publish(&root, &mut r_ev, "site/a/secret").await));
    assert!(published(publish(&root, &mut r_ev, "site/a/open").await));
    loop {
        if let Event::Incoming(Packet::Publish(p)) = next(&mut a_ev).await {
            assert_eq!(&p.topic[..], b"site/a/open");
            break;
        }
    }

    // A client id is its user's: bob cannot take alice's over.
    let (host, port) = s.mqtt.rsplit_once(':').unwrap();
    let mut o = MqttOptions::new("alice-1", host, port.parse().unwrap());
    o.set_credentials("bob", "b-pw");
    let (_c, mut ev) = AsyncClient::new(o, 8);
    let refused = tokio::time::timeout(Duration::from_secs(20), ev.poll())
        .await
        .expect("an answer in time");
    assert!(refused.is_err(), "{refused:?}");
}

#[tokio::test]
async fn the_admin_api_asks_for_credentials_and_checks_them() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path());
    let http = s.http.as_deref().unwrap();
    let status = |user| support::admin_status(http, "GET", "/api/v1/streams", user);
    assert_eq!(status(None).await, 401);
    assert_eq!(status(Some(("alice", "nope"))).await, 401);
    assert_eq!(status(Some(USERS[0])).await, 403, "alice may not look");
    assert_eq!(status(Some(USERS[1])).await, 200, "bob may look");
    let delete = |user| support::admin_status(http, "DELETE", "/api/v1/streams/sb", user);
    assert_eq!(delete(Some(USERS[1])).await, 403, "bob may not change");
    assert_eq!(delete(Some(USERS[2])).await, 204, "root may");
    // Health checks stay open: load balancers do not log in.
    assert_eq!(
        support::admin_status(http, "GET", "/healthz", None).await,
        200
    );
}

#[tokio::test]
async fn sighup_puts_a_new_acl_in_force_for_live_connections() {
    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path());
    let mut alice = Native::login(&s.native, Some(USERS[0])).await.unwrap();
    let mut root = Native::login(&s.native, Some(USERS[2])).await.unwrap();
    assert_eq!(alice.subscribe("site/a/#", None).await, None);
    assert_eq!(alice.publish("site/b/t").await, DENIED);

    // Alice now may write site/b/# and no longer read site/a/#.
    let acl = ACL.replace(
        "user alice\ntopic readwrite site/a/#",
        "user alice\ntopic write site/a/#\ntopic readwrite site/b/#",
    );
    std::fs::write(dir.path().join("acl"), acl).unwrap();
    // SAFETY: kill(2) on our own child's pid, which it keeps until reaped.
    assert_eq!(unsafe { libc::kill(s.child.id() as i32, libc::SIGHUP) }, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while alice.publish("site/b/t").await.is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "the new ACL never applied"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The same connection, and its subscription made under the old rules gets nothing
    // the new ones do not let it read: site/b/t reaches it, site/a/t does not.
    assert_eq!(alice.subscribe("site/b/#", None).await, None);
    assert_eq!(root.publish("site/a/t").await, None);
    assert_eq!(root.publish("site/b/t").await, None);
    match alice.recv().await {
        Frame::Deliver { topic, .. } => assert_eq!(topic.as_str(), "site/b/t"),
        other => panic!("{other:?}"),
    }
}

/// MQTT 3.1.1 has no reason codes: a refused filter gets the plain failure 0x80 in its SUBACK
/// (next to the granted one of the same SUBSCRIBE), and a refused QoS 1 publish is
/// acknowledged and dropped, as Mosquitto does.
#[tokio::test]
async fn mqtt_3_1_1_refusals_use_the_plain_codes() {
    use rumqttc::{
        AsyncClient, Event, EventLoop, MqttOptions, Packet, QoS, SubscribeFilter,
        SubscribeReasonCode,
    };
    async fn next(ev: &mut EventLoop) -> Event {
        tokio::time::timeout(Duration::from_secs(20), ev.poll())
            .await
            .expect("an event in time")
            .expect("the connection works")
    }
    async fn connect(addr: &str, id: &str, user: (&str, &str)) -> (AsyncClient, EventLoop) {
        let (host, port) = addr.rsplit_once(':').unwrap();
        let mut o = MqttOptions::new(id, host, port.parse().unwrap());
        o.set_credentials(user.0, user.1);
        let (c, mut ev) = AsyncClient::new(o, 16);
        while !matches!(next(&mut ev).await, Event::Incoming(Packet::ConnAck(_))) {}
        (c, ev)
    }
    async fn suback(ev: &mut EventLoop) -> Vec<SubscribeReasonCode> {
        loop {
            if let Event::Incoming(Packet::SubAck(a)) = next(ev).await {
                return a.return_codes;
            }
        }
    }
    async fn puback(c: &AsyncClient, ev: &mut EventLoop, topic: &str) {
        c.publish(topic, QoS::AtLeastOnce, false, "x")
            .await
            .unwrap();
        while !matches!(next(ev).await, Event::Incoming(Packet::PubAck(_))) {}
    }

    let dir = tempfile::tempdir().unwrap();
    let s = serve(dir.path());
    let (alice, mut a_ev) = connect(&s.mqtt, "alice-311", USERS[0]).await;
    let (root, mut r_ev) = connect(&s.mqtt, "root-311", USERS[2]).await;

    alice
        .subscribe_many([
            SubscribeFilter::new("site/a/#".into(), QoS::AtLeastOnce),
            SubscribeFilter::new("site/#".into(), QoS::AtLeastOnce),
        ])
        .await
        .unwrap();
    assert_eq!(
        suback(&mut a_ev).await,
        [
            SubscribeReasonCode::Success(QoS::AtLeastOnce),
            SubscribeReasonCode::Failure
        ]
    );

    root.subscribe("site/b/#", QoS::AtLeastOnce).await.unwrap();
    assert_eq!(
        suback(&mut r_ev).await,
        [SubscribeReasonCode::Success(QoS::AtLeastOnce)]
    );
    // alice may not write site/b: acknowledged, not delivered
    puback(&alice, &mut a_ev, "site/b/refused").await;
    puback(&root, &mut r_ev, "site/b/allowed").await;
    loop {
        if let Event::Incoming(Packet::Publish(p)) = next(&mut r_ev).await {
            assert_eq!(p.topic, "site/b/allowed");
            break;
        }
    }
}
