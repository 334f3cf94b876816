//! The `[mqtt]` section of the node's configuration file; `mqtt.toml` is its documented
//! default (the node composes it into the whole default file, and its test holds the two equal).

use std::time::Duration;

use bytesize::ByteSize;
use fogline_broker::SlowConsumerPolicy;
use fogline_net::tls::TlsConfig;
use serde::{Deserialize, Serialize};

/// The documented default of the `[mqtt]` section.
pub const DEFAULT_SECTION: &str = include_str!("mqtt.toml");

/// MQTT listeners and per-session limits.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MqttConfig {
    /// MQTT over TCP: `HOST:PORT` or `unix:/PATH` addresses.
    pub listen: Vec<String>,
    /// MQTT over WebSocket (subprotocol `mqtt`): `HOST:PORT` or `unix:/PATH` addresses.
    pub ws_listen: Vec<String>,
    /// MQTT over TLS (Mosquitto's port 8883), with the settings of `[mqtt.tls]`.
    pub tls_listen: Vec<String>,
    /// MQTT over WebSocket over TLS (`wss://`), with the settings of `[mqtt.tls]`.
    pub wss_listen: Vec<String>,
    /// Certificates and client verification of the TLS and WSS listeners.
    pub tls: TlsConfig,
    /// Largest packet accepted (announced to MQTT 5 clients); larger ones
    /// close the connection (5.0: DISCONNECT 0x95).
    pub max_packet_size: ByteSize,
    /// Most QoS 2 messages a client may have unreleased (MQTT 5 Receive Maximum).
    pub receive_maximum: u16,
    /// Most unacknowledged QoS 1/2 messages sent to one client (less when
    /// an MQTT 5 client asks for less).
    pub max_inflight: u16,
    /// Most messages waiting in a session for an inflight slot; past it the
    /// session leaves them in its subscription queues (which apply `slow_subscriber`;
    /// a durable session has journaled them already, as they were routed).
    pub max_queued: usize,
    /// Most sessions held at once, connected or kept offline; a CONNECT that would start
    /// one more is refused (MQTT 5: 0x97 quota exceeded, 3.1.1: 0x03 server unavailable).
    pub max_sessions: usize,
    /// Most subscriptions one session holds; a SUBSCRIBE filter past it is refused
    /// (MQTT 5: 0x97 quota exceeded, 3.1.1: 0x80) and the others are granted.
    pub max_subscriptions: usize,
    /// Topic aliases a client may use (MQTT 5 Topic Alias Maximum).
    pub topic_alias_maximum: u16,
    /// Longest keep-alive accepted, seconds; a longer (or zero) request from
    /// an MQTT 5 client is answered with Server Keep Alive. 0: accept any.
    pub max_keep_alive: u16,
    /// A connection that sends no CONNECT within this time is closed.
    #[serde(with = "humantime_serde")]
    pub connect_timeout: Duration,
    /// A connection whose client takes no bytes of a pending write for this long (it stopped
    /// reading, or vanished without a reset) is closed; a slow link that keeps taking bytes
    /// never is.
    #[serde(with = "humantime_serde")]
    pub write_stall: Duration,
    /// Longest session expiry granted, seconds (MQTT 3.1.1 persistent
    /// sessions get this too). `4294967295` means never.
    pub max_session_expiry: u32,
    /// What a subscription queue of a connected MQTT session does when it
    /// is full (the client does not keep up). The default, `block`, pushes
    /// back on publishers for up to the broker's `block_timeout`; a queue still
    /// full then (or at once under `disconnect`) is emptied, its messages lost,
    /// and the client disconnected (MQTT 5: 0x97); the session keeps the
    /// subscription. An offline session's queue is
    /// always drained into the session, which keeps its newest `max_queued`
    /// messages.
    pub slow_subscriber: SlowConsumerPolicy,
    /// How often Mosquitto's `$SYS/broker/...` topics are published (0: never).
    #[serde(with = "humantime_serde")]
    pub sys_interval: Duration,
    /// The journal of durable MQTT state (`data_dir/mqtt/state.log`) is compacted while
    /// the node runs once it is past this size and twice its size after the last
    /// compaction (and always when the node starts); at least 4 KiB.
    pub state_compact_size: ByteSize,
}

impl Default for MqttConfig {
    fn default() -> Self {
        Self {
            listen: vec!["127.0.0.1:1883".into()],
            ws_listen: Vec::new(),
            tls_listen: Vec::new(),
            wss_listen: Vec::new(),
            tls: TlsConfig::default(),
            max_packet_size: ByteSize::mib(16),
            receive_maximum: 1024,
            max_inflight: 1024,
            max_queued: 100_000,
            max_sessions: 100_000,
            max_subscriptions: 4096,
            topic_alias_maximum: 64,
            max_keep_alive: 0,
            connect_timeout: Duration::from_secs(10),
            write_stall: Duration::from_secs(30),
            max_session_expiry: u32::MAX,
            slow_subscriber: SlowConsumerPolicy::Block,
            sys_interval: Duration::from_secs(10),
            state_compact_size: ByteSize::mib(64),
        }
    }
}
