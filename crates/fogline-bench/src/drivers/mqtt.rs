//! MQTT 3.1.1 against Mosquitto and fogline's MQTT listener, with rumqttc's packet codec.
//!
//! Volatile: QoS 0 both ways. Persistent: QoS 1 (the broker stores and acknowledges each
//! message; `flush` waits for every PUBACK). Each publisher and subscriber is its own TCP
//! connection, driven inline by the caller: no task, no channel.
//!
//! Packets are encoded and decoded by rumqttc (`rumqttc::Packet`), but its event loop is not
//! used: it writes and flushes once per PUBLISH, a system call per message, which capped the
//! load generator near 340k messages/s while the broker under test had CPU to spare. Here a
//! publisher buffers a burst and writes it at once (the harness flushes before every pause, so
//! a paced message still goes out alone and at once), and a subscriber reads whatever the
//! socket holds and answers QoS 1 messages with PUBACKs written before it next waits. Every
//! broker gets the same client.
//!
//! Options, so that the same code measures every broker either way: [`MqttDriver::with_tls`]
//! speaks MQTT over TLS (rustls with the graviola provider, as fogline's listeners; the
//! broker's certificate is checked against a CA file and a server name), and
//! [`MqttDriver::with_login`] sends a user name and password in CONNECT.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use rumqttc::mqttbytes::v4::{
    ConnAck, Connect, ConnectReturnCode, Login, Packet, PubAck, Publish, Subscribe,
    SubscribeReasonCode,
};
use rumqttc::mqttbytes::{Error as CodecError, QoS};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use crate::driver::{
    Driver, DriverError, DriverResult, Durability, Publisher, Received, Subscriber,
};

const MAX_PACKET: usize = 16 * 1024 * 1024;
/// Longer than any run, so no PINGREQ is needed: a subscriber of a QoS 0 stream never writes.
const KEEP_ALIVE_SECS: u16 = 3600;
/// A publisher writes its buffer once it holds this much.
const WRITE_AT: usize = 64 * 1024;
/// Most unacknowledged QoS 1 messages; `send` reads PUBACKs past it.
const MAX_INFLIGHT: u64 = 1024;
/// Read buffer growth step.
const READ_CHUNK: usize = 64 * 1024;

static CLIENT_SEQ: AtomicU64 = AtomicU64::new(0);

/// MQTT against a broker.
pub struct MqttDriver {
    name: &'static str,
    addr: String,
    qos: QoS,
    tls: Option<MqttTls>,
    login: Option<Login>,
}

/// How the driver speaks TLS: the CAs it trusts and the name it expects the broker's
/// certificate to carry.
#[derive(Clone)]
pub struct MqttTls {
    config: Arc<rustls::ClientConfig>,
    server_name: ServerName<'static>,
}

impl MqttTls {
    /// Trusts the CA certificates of the PEM file `cafile` and expects a broker certificate
    /// for `server_name` (a DNS name or an IP address); no client certificate. Offers the
    /// provider's cipher suites, or only `cipher_suite` (rustls' name, e.g.
    /// `TLS13_AES_256_GCM_SHA384`): brokers choose differently from the same offer (rustls
    /// follows the client's order, OpenSSL its own), and a comparison wants one suite.
    ///
    /// # Errors
    /// When the file cannot be read or holds no certificate, the name is invalid, or the
    /// provider has no such suite.
    pub fn new(cafile: &Path, server_name: &str, cipher_suite: Option<&str>) -> DriverResult<Self> {
        let bad = |e: &dyn std::fmt::Display| {
            DriverError::connect("tls", format!("CA file {}: {e}", cafile.display()))
        };
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(cafile).map_err(|e| bad(&e))? {
            roots.add(cert.map_err(|e| bad(&e))?).map_err(|e| bad(&e))?;
        }
        if roots.is_empty() {
            return Err(bad(&"no certificate"));
        }
        let mut provider = rustls_graviola::default_provider();
        if let Some(name) = cipher_suite {
            provider
                .cipher_suites
                .retain(|s| format!("{:?}", s.suite()) == name);
            if provider.cipher_suites.is_empty() {
                return Err(DriverError::connect(
                    "tls",
                    format!("no cipher suite {name} in the provider"),
                ));
            }
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
            .with_safe_default_protocol_versions()
            .map_err(|e| DriverError::connect("tls", e))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let server_name = ServerName::try_from(server_name.to_string())
            .map_err(|e| DriverError::connect("tls", format!("{server_name}: {e}")))?;
        Ok(Self {
            config: Arc::new(config),
            server_name,
        })
    }
}

impl MqttDriver {
    /// A driver for the broker at `addr` (`host:port`), reported as `name`.
    ///
    /// # Errors
    /// When `addr` has no valid port.
    pub fn new(name: &'static str, addr: &str, durability: Durability) -> DriverResult<Self> {
        let valid = addr
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
        if !valid {
            return Err(DriverError::connect(name, format!("bad address {addr}")));
        }
        let qos = match durability {
            Durability::Volatile => QoS::AtMostOnce,
            Durability::Persistent => QoS::AtLeastOnce,
        };
        Ok(Self {
            name,
            addr: addr.to_string(),
            qos,
            tls: None,
            login: None,
        })
    }

    /// Speaks MQTT over TLS.
    pub fn with_tls(mut self, tls: MqttTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Logs in as `user` with `password` (once per connection, in CONNECT).
    pub fn with_login(mut self, user: &str, password: &str) -> Self {
        self.login = Some(Login::new(user, password));
        self
    }

    /// The TLS version and cipher suite the broker negotiates with this driver, from a
    /// handshake of its own (no MQTT is sent); `None` without TLS.
    ///
    /// # Errors
    /// When the broker cannot be reached or the handshake fails.
    pub async fn tls_session(&self) -> DriverResult<Option<String>> {
        let Stream::Tls(mut s) = self.open().await? else {
            return Ok(None);
        };
        let c = s.get_ref().1;
        let unknown = || "unknown".to_string();
        let session = format!(
            "{}, {}",
            c.protocol_version()
                .map_or_else(unknown, |v| format!("{v:?}")),
            c.negotiated_cipher_suite()
                .map_or_else(unknown, |s| format!("{:?}", s.suite()))
        );
        let _ = s.shutdown().await;
        Ok(Some(session))
    }

    /// A socket to the broker, past the TLS handshake when TLS is on.
    async fn open(&self) -> DriverResult<Stream> {
        let tcp = TcpStream::connect(&self.addr)
            .await
            .map_err(|e| DriverError::connect(self.name, e))?;
        // Small packets and QoS 1 acks must not wait for Nagle's algorithm.
        tcp.set_nodelay(true)
            .map_err(|e| DriverError::connect(self.name, e))?;
        Ok(match &self.tls {
            None => Stream::Plain(tcp),
            Some(tls) => Stream::Tls(Box::new(
                tokio_rustls::TlsConnector::from(tls.config.clone())
                    .connect(tls.server_name.clone(), tcp)
                    .await
                    .map_err(|e| DriverError::connect(self.name, format!("TLS: {e}")))?,
            )),
        })
    }

    /// A connected MQTT session (clean session, so nothing of an earlier run comes back).
    async fn connect(&self, role: &str) -> DriverResult<Conn> {
        let stream = self.open().await?;
        let mut conn = Conn {
            name: self.name,
            stream,
            inbuf: BytesMut::with_capacity(READ_CHUNK),
            out: BytesMut::with_capacity(WRITE_AT * 2),
        };
        let id = format!(
            "fb-{role}-{}-{}",
            std::process::id(),
            CLIENT_SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let mut c = Connect::new(id);
        c.keep_alive = KEEP_ALIVE_SECS;
        c.login = self.login.clone();
        conn.put(&Packet::Connect(c))?;
        conn.write_out().await?;
        match conn.next_packet().await? {
            Packet::ConnAck(ConnAck {
                code: ConnectReturnCode::Success,
                ..
            }) => Ok(conn),
            Packet::ConnAck(a) => Err(DriverError::connect(
                self.name,
                format!("refused: {:?}", a.code),
            )),
            p => Err(DriverError::connect(
                self.name,
                format!("expected CONNACK, got {p:?}"),
            )),
        }
    }
}

/// A socket, with or without TLS. An enum rather than a boxed trait object: the plain path
/// stays the direct calls it was before TLS.
enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    async fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.write_all(buf).await,
            Stream::Tls(s) => {
                s.write_all(buf).await?;
                // rustls may still hold records that the socket did not take.
                s.flush().await
            }
        }
    }

    async fn read_buf(&mut self, buf: &mut BytesMut) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read_buf(buf).await,
            Stream::Tls(s) => s.read_buf(buf).await,
        }
    }

    async fn shutdown(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.shutdown().await,
            Stream::Tls(s) => s.shutdown().await,
        }
    }
}

/// One MQTT connection: a read buffer and a write buffer over a socket.
struct Conn {
    name: &'static str,
    stream: Stream,
    inbuf: BytesMut,
    out: BytesMut,
}

impl Conn {
    /// Encodes a packet into the write buffer.
    fn put(&mut self, p: &Packet) -> DriverResult<()> {
        p.write(&mut self.out, MAX_PACKET)
            .map(drop)
            .map_err(|e| DriverError::io(self.name, e))
    }

    /// Writes out the write buffer.
    async fn write_out(&mut self) -> DriverResult<()> {
        if !self.out.is_empty() {
            self.stream
                .write_all(&self.out)
                .await
                .map_err(|e| DriverError::io(self.name, e))?;
            self.out.clear();
        }
        Ok(())
    }

    /// The next whole packet already read, if any.
    fn buffered_packet(&mut self) -> DriverResult<Option<Packet>> {
        match Packet::read(&mut self.inbuf, MAX_PACKET) {
            Ok(p) => Ok(Some(p)),
            Err(CodecError::InsufficientBytes(_)) => Ok(None),
            Err(e) => Err(DriverError::io(self.name, e)),
        }
    }

    /// Reads more from the socket; an error once the broker closed it.
    async fn fill(&mut self) -> DriverResult<()> {
        if self.inbuf.capacity() - self.inbuf.len() < READ_CHUNK / 4 {
            self.inbuf.reserve(READ_CHUNK);
        }
        match self.stream.read_buf(&mut self.inbuf).await {
            Ok(0) => Err(DriverError::io(
                self.name,
                "the broker closed the connection",
            )),
            Ok(_) => Ok(()),
            Err(e) => Err(DriverError::io(self.name, e)),
        }
    }

    /// The next packet, writing out what is buffered before it waits.
    async fn next_packet(&mut self) -> DriverResult<Packet> {
        loop {
            if let Some(p) = self.buffered_packet()? {
                return Ok(p);
            }
            self.write_out().await?;
            self.fill().await?;
        }
    }
}

struct MqttPub {
    conn: Conn,
    publish: Publish,
    sent: u64,
    acked: u64,
    next_pkid: u16,
}

impl MqttPub {
    /// QoS 1: reads PUBACKs until at most `inflight` messages are unacknowledged.
    async fn await_acks(&mut self, inflight: u64) -> DriverResult<()> {
        if self.publish.qos == QoS::AtMostOnce {
            return Ok(());
        }
        while self.sent - self.acked > inflight {
            match self.conn.next_packet().await? {
                Packet::PubAck(_) => self.acked += 1,
                Packet::PingResp => {}
                p => {
                    return Err(DriverError::io(
                        self.conn.name,
                        format!("unexpected packet {p:?}"),
                    ))
                }
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Publisher for MqttPub {
    async fn send(&mut self, payload: Bytes) -> DriverResult<()> {
        if self.publish.qos != QoS::AtMostOnce {
            self.await_acks(MAX_INFLIGHT - 1).await?;
            self.next_pkid = self.next_pkid.checked_add(1).unwrap_or(1);
            self.publish.pkid = self.next_pkid;
        }
        self.publish.payload = payload;
        // Encoded in place: a Packet would clone the topic for every message.
        self.publish
            .write(&mut self.conn.out)
            .map_err(|e| DriverError::io(self.conn.name, e))?;
        self.sent += 1;
        if self.conn.out.len() >= WRITE_AT {
            self.conn.write_out().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> DriverResult<()> {
        self.conn.write_out().await?;
        // QoS 1: until the broker acknowledged every message.
        self.await_acks(0).await
    }

    async fn close(&mut self) -> DriverResult<()> {
        self.flush().await?;
        // A clean DISCONNECT: no will, and the broker closes the session at once.
        self.conn.put(&Packet::Disconnect)?;
        self.conn.write_out().await?;
        let _ = self.conn.stream.shutdown().await;
        Ok(())
    }
}

struct MqttSub {
    conn: Conn,
}

#[async_trait]
impl Subscriber for MqttSub {
    async fn recv(&mut self) -> DriverResult<Option<Received>> {
        loop {
            match self.conn.next_packet().await? {
                Packet::Publish(p) => {
                    // Timed before the acknowledgement this driver may write.
                    let got = Received::now(p.payload);
                    if p.qos != QoS::AtMostOnce {
                        // Written with the next write, before the subscriber waits again.
                        self.conn.put(&Packet::PubAck(PubAck::new(p.pkid)))?;
                        if self.conn.out.len() >= WRITE_AT {
                            self.conn.write_out().await?;
                        }
                    }
                    return Ok(Some(got));
                }
                Packet::Disconnect => return Ok(None),
                _ => {}
            }
        }
    }
}

#[async_trait]
impl Driver for MqttDriver {
    fn name(&self) -> &'static str {
        self.name
    }

    async fn publisher(&self, topic: &str) -> DriverResult<Box<dyn Publisher>> {
        let conn = self.connect("pub").await?;
        Ok(Box::new(MqttPub {
            conn,
            publish: Publish::from_bytes(topic, self.qos, Bytes::new()),
            sent: 0,
            acked: 0,
            next_pkid: 0,
        }))
    }

    async fn subscriber(&self, topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        let mut conn = self.connect("sub").await?;
        let mut subscribe = Subscribe::new(topic, self.qos);
        subscribe.pkid = 1; // must not be 0 [MQTT-2.3.1-1]
        conn.put(&Packet::Subscribe(subscribe))?;
        conn.write_out().await?;
        match conn.next_packet().await? {
            // Granted at the QoS asked for: a downgrade would measure QoS 0 as QoS 1.
            Packet::SubAck(a)
                if a.return_codes
                    .iter()
                    .all(|c| *c == SubscribeReasonCode::Success(self.qos)) =>
            {
                Ok(Box::new(MqttSub { conn }))
            }
            p => Err(DriverError::connect(
                self.name,
                format!("subscription refused: {p:?}"),
            )),
        }
    }
}
