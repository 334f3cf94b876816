//! Test harness: a real broker and the MQTT front end (listeners on 127.0.0.1:0)
//! in-process, and a raw MQTT client built on the crate's own codec so tests can
//! also send malformed bytes.
#![allow(dead_code, unused_imports)]

use std::time::Duration;

use bytes::BytesMut;
use fogline_mqtt::codec::{self, Connect, Packet, Properties, Version};
use fogline_mqtt::{MqttConfig, MqttServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

/// What a test server is configured with: the broker and the MQTT front end.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub broker: fogline_broker::BrokerConfig,
    pub mqtt: MqttConfig,
}

/// How long a test waits for something expected.
pub const WAIT: Duration = Duration::from_secs(10);

pub struct TestServer {
    pub mqtt: String,
    pub port: u16,
    /// The WebSocket port when `mqtt.ws_listen` was set.
    pub ws_port: Option<u16>,
    pub broker: fogline_broker::Broker,
    /// The MQTT sessions and retained messages.
    pub sessions: fogline_mqtt::MqttStats,
    pub dir: tempfile::TempDir,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestServer {
    /// A server with memory storage; `tune` adjusts the config first.
    pub async fn start(tune: impl FnOnce(&mut Config)) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        TestServer::start_in(dir, |c| {
            c.broker.storage = fogline_broker::StorageMode::Memory;
            tune(c)
        })
        .await
    }

    /// A server keeping its data in `dir`.
    pub async fn start_in(dir: tempfile::TempDir, tune: impl FnOnce(&mut Config)) -> TestServer {
        let mut cfg = Config::default();
        cfg.mqtt.listen = vec!["127.0.0.1:0".into()];
        cfg.broker.data_dir = dir.path().to_path_buf();
        tune(&mut cfg);
        let (broker, _) = fogline_broker::Broker::open(cfg.broker).expect("broker opens");
        let server = MqttServer::bind(cfg.mqtt, broker.clone())
            .await
            .expect("server binds");
        let addr: std::net::SocketAddr = server.local_addrs()[0].parse().expect("TCP");
        let ws_port = server
            .ws_addrs()
            .first()
            .map(|a| a.parse::<std::net::SocketAddr>().expect("TCP").port());
        let sessions = server.stats();
        let (tx, rx) = oneshot::channel();
        let task = tokio::spawn(server.run_until(async {
            let _ = rx.await;
        }));
        TestServer {
            mqtt: addr.to_string(),
            port: addr.port(),
            ws_port,
            broker,
            sessions,
            dir,
            stop: Some(tx),
            task: Some(task),
        }
    }

    pub async fn stop(mut self) -> tempfile::TempDir {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
        let TestServer { dir, .. } = self;
        dir
    }
}

/// A raw MQTT connection.
pub struct Raw {
    pub sock: TcpStream,
    pub version: Version,
    buf: BytesMut,
}

pub fn connect_packet(version: Version, client_id: &str, clean: bool) -> Connect {
    Connect {
        version,
        clean_start: clean,
        keep_alive: 60,
        client_id: client_id.into(),
        will: None,
        username: None,
        password: None,
        props: Default::default(),
    }
}

impl Raw {
    pub async fn open(addr: &str, version: Version) -> Raw {
        let sock = TcpStream::connect(addr).await.expect("connect");
        Raw::on(sock, version)
    }

    fn on(sock: TcpStream, version: Version) -> Raw {
        sock.set_nodelay(true).expect("nodelay");
        Raw {
            sock,
            version,
            buf: BytesMut::new(),
        }
    }

    /// Connects, sends `c`, and returns the CONNACK.
    pub async fn connect(addr: &str, c: Connect) -> (Raw, codec::ConnAck) {
        let sock = TcpStream::connect(addr).await.expect("connect");
        Raw::connect_on(sock, c).await
    }

    /// As [`Raw::connect`] on a socket already connected to the server.
    pub async fn connect_on(sock: TcpStream, c: Connect) -> (Raw, codec::ConnAck) {
        let mut raw = Raw::on(sock, c.version);
        raw.send(&Packet::Connect(Box::new(c))).await;
        match raw.recv().await {
            Some(Packet::ConnAck(a)) => (raw, a),
            other => panic!("expected CONNACK, got {other:?}"),
        }
    }

    pub async fn send(&mut self, p: &Packet) {
        let mut b = BytesMut::new();
        codec::encode(p, self.version, &mut b).expect("encode");
        self.sock.write_all(&b).await.expect("write");
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        let _ = self.sock.write_all(bytes).await;
    }

    /// The next packet; `None` when the server closed the connection.
    pub async fn recv(&mut self) -> Option<Packet> {
        self.recv_within(WAIT)
            .await
            .expect("a packet or a close in time")
    }

    /// The next packet within `t`: `Err(())` on timeout, `Ok(None)` on close.
    pub async fn recv_within(&mut self, t: Duration) -> Result<Option<Packet>, ()> {
        let deadline = tokio::time::Instant::now() + t;
        loop {
            match codec::decode(&mut self.buf, self.version, usize::MAX) {
                Ok(Some(p)) => return Ok(Some(p)),
                Ok(None) => {}
                Err(e) => panic!("server sent a bad packet: {e}"),
            }
            match tokio::time::timeout_at(deadline, self.sock.read_buf(&mut self.buf)).await {
                Err(_) => return Err(()),
                Ok(Ok(0)) | Ok(Err(_)) => return Ok(None),
                Ok(Ok(_)) => {}
            }
        }
    }

    /// Reads until the server closes; returns what came before (for a DISCONNECT).
    pub async fn expect_close(&mut self) -> Vec<Packet> {
        let mut got = Vec::new();
        loop {
            match self.recv().await {
                Some(p) => got.push(p),
                None => return got,
            }
        }
    }
}

/// Runs a command, returning its output; panics when it cannot start.
pub fn have(cmd: &str) -> bool {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {cmd}"))
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

pub use fogline_mqtt::codec::{
    Ack, Disconnect, Filter, Publish, QoS, SubAck, Subscribe, Unsubscribe, Will,
};

pub fn publish(topic: &str, payload: &[u8], qos: QoS, pkid: u16) -> Publish {
    Publish {
        dup: false,
        qos,
        retain: false,
        topic: topic.into(),
        pkid,
        props: Default::default(),
        payload: bytes::Bytes::copy_from_slice(payload),
    }
}

pub fn filter(f: &str, qos: QoS) -> Filter {
    Filter {
        filter: f.into(),
        qos,
        no_local: false,
        retain_as_published: false,
        retain_handling: 0,
    }
}

impl Raw {
    /// Subscribes and returns the SUBACK codes.
    pub async fn subscribe(&mut self, pkid: u16, filters: Vec<Filter>) -> Vec<u8> {
        self.subscribe_with(pkid, filters, Properties::default())
            .await
    }

    pub async fn subscribe_with(
        &mut self,
        pkid: u16,
        filters: Vec<Filter>,
        props: Properties,
    ) -> Vec<u8> {
        self.send(&Packet::Subscribe(Subscribe {
            pkid,
            props: props.into(),
            filters,
        }))
        .await;
        match self.recv().await {
            Some(Packet::SubAck(a)) => {
                assert_eq!(
                    a.pkid, pkid,
                    "[MQTT-3.8.4-2] SUBACK carries the SUBSCRIBE's packet id"
                );
                a.codes
            }
            other => panic!("expected SUBACK, got {other:?}"),
        }
    }

    /// The next PUBLISH (skipping nothing else: anything else panics).
    pub async fn expect_publish(&mut self) -> Publish {
        match self.recv().await {
            Some(Packet::Publish(p)) => p,
            other => panic!("expected PUBLISH, got {other:?}"),
        }
    }

    /// Asserts nothing arrives for `ms` milliseconds.
    pub async fn expect_silence(&mut self, ms: u64) {
        if let Ok(p) = self.recv_within(Duration::from_millis(ms)).await {
            panic!("expected nothing, got {p:?}");
        }
    }

    /// Bytes the server has already put on this socket, without waiting for more (a peek
    /// at the socket's receive queue, not at tokio's cached readiness).
    pub fn queued_bytes(&self) -> usize {
        use std::os::fd::AsRawFd;
        let mut b = [0u8; 256];
        // SAFETY: `b` is a live buffer of the length given; MSG_PEEK leaves the data queued.
        let n = unsafe {
            libc::recv(
                self.sock.as_raw_fd(),
                b.as_mut_ptr().cast(),
                b.len(),
                libc::MSG_PEEK | libc::MSG_DONTWAIT,
            )
        };
        let queued = match usize::try_from(n) {
            Ok(n) => n,
            Err(_) => {
                let e = std::io::Error::last_os_error();
                assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "peek failed: {e}");
                0
            }
        };
        queued + self.buf.len()
    }

    /// Publishes QoS 1 and waits for a PUBACK that accepts it.
    pub async fn publish_qos1(&mut self, p: Publish) {
        let pkid = p.pkid;
        self.send(&Packet::Publish(p)).await;
        match self.recv().await {
            Some(Packet::PubAck(a)) => {
                assert_eq!(a.pkid, pkid);
                assert_eq!(a.reason, 0, "PUBACK refuses the message");
            }
            other => panic!("expected PUBACK, got {other:?}"),
        }
    }

    /// A ping round trip: everything the server had to send before it has been read.
    pub async fn sync(&mut self) {
        self.send(&Packet::PingReq).await;
        match self.recv().await {
            Some(Packet::PingResp) => {}
            other => panic!("expected PINGRESP, got {other:?}"),
        }
    }
}
