//! The `[bridge]` section: `[[bridge.kafka]]` tables, one per stream forwarded to Kafka, and
//! `[[bridge.kafka_in]]` tables, one per set of Kafka topics consumed into fogline.
//! `[[bridge.mqtt]]` tables, one per connection to another MQTT broker.

use std::path::PathBuf;
use std::time::Duration;

use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

pub use crate::config_in::KafkaInConfig;
pub use crate::kafka::security::{KafkaSecurity, SaslMechanism, SecurityProtocol};

/// The documented default section.
pub const DEFAULT_SECTION: &str = include_str!("bridge.toml");

/// Settings of the bridge component.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BridgeConfig {
    /// Streams forwarded to Kafka.
    pub kafka: Vec<KafkaOutConfig>,
    /// Kafka topics consumed into fogline.
    pub kafka_in: Vec<KafkaInConfig>,
    /// Connections to other MQTT brokers.
    pub mqtt: Vec<MqttConfig>,
}

/// Which record key Kafka gets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum KeyFrom {
    /// The fogline topic.
    Topic,
    /// A header's value (no key when the record has no such header).
    Header(String),
    /// No key.
    None,
}

impl TryFrom<String> for KeyFrom {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        match s.as_str() {
            "topic" => Ok(KeyFrom::Topic),
            "none" => Ok(KeyFrom::None),
            _ => match s.strip_prefix("header:") {
                Some(h) if !h.is_empty() => Ok(KeyFrom::Header(h.to_string())),
                _ => Err(format!(
                    "key {s:?}: expected \"topic\", \"none\" or \"header:NAME\""
                )),
            },
        }
    }
}

impl From<KeyFrom> for String {
    fn from(k: KeyFrom) -> String {
        match k {
            KeyFrom::Topic => "topic".into(),
            KeyFrom::None => "none".into(),
            KeyFrom::Header(h) => format!("header:{h}"),
        }
    }
}

/// Compression of the batches sent to Kafka (pure Rust codecs only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compression {
    /// None.
    #[default]
    None,
    /// gzip.
    Gzip,
    /// Snappy.
    Snappy,
}

/// What happens when the stream's retention would drop records not yet forwarded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnRetention {
    /// Retention keeps them: the stream grows past its limit until they are forwarded, up to
    /// `hold_max` more, and then refuses new records (publishers get an error).
    #[default]
    Hold,
    /// Retention drops them; the bridge counts them (`fogline_bridge_dropped_total`), logs
    /// the gap and goes on from the oldest record kept.
    Drop,
}

/// Where a bridge with no saved position starts (a Kafka-in bridge: with no offset
/// committed and nothing of the partition in fogline).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Start {
    /// The oldest record kept (by the stream, or the Kafka partition).
    #[default]
    Earliest,
    /// The next record published.
    Latest,
}

/// One `[[bridge.kafka]]`: a stream forwarded to Kafka.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaOutConfig {
    /// The bridge's name (in the API, metrics and the saved position); default `kafka-N`.
    #[serde(default)]
    pub name: Option<String>,
    /// Kafka bootstrap servers, `host:port`.
    pub bootstrap: Vec<String>,
    /// The stream forwarded.
    pub stream: String,
    /// Only records whose topic matches this filter (default: all of the stream's).
    #[serde(default)]
    pub filter: Option<String>,
    /// The Kafka topic: a name, or a template where `{topic}` is the fogline topic with `/`
    /// turned into `topic_separator` and `{stream}` the stream's name.
    #[serde(default = "default_topic")]
    pub topic: String,
    /// What `/` becomes in `{topic}`.
    #[serde(default = "default_separator")]
    pub topic_separator: String,
    /// The Kafka record key: `"topic"`, `"header:NAME"` or `"none"`. Keyed records go to
    /// partition `murmur2(key) % partitions`, as Kafka's own producer puts them; unkeyed
    /// ones by the fogline topic, so each topic stays in order.
    #[serde(default = "default_key")]
    pub key: KeyFrom,
    /// Carry the records' headers as Kafka headers.
    #[serde(default = "yes")]
    pub headers: bool,
    /// Most records per produce request.
    #[serde(default = "default_batch_records")]
    pub batch_records: usize,
    /// Most bytes of records per produce request (payload, key and headers, the origin
    /// headers included): keep it below the topic's `max.message.bytes` (Kafka's default
    /// 1 MiB).
    #[serde(default = "default_batch_bytes")]
    pub batch_bytes: ByteSize,
    /// Batch compression.
    #[serde(default)]
    pub compression: Compression,
    /// When retention would drop records not yet forwarded.
    #[serde(default)]
    pub on_retention: OnRetention,
    /// Where a new bridge starts.
    #[serde(default)]
    pub start: Start,
    /// Create a missing Kafka topic, with `partitions` and `replication`.
    #[serde(default = "yes")]
    pub create_topics: bool,
    /// Partitions of a topic the bridge creates.
    #[serde(default = "one_i32")]
    pub partitions: i32,
    /// Replication factor of a topic the bridge creates.
    #[serde(default = "one_i16")]
    pub replication: i16,
    /// Longest wait between two attempts to reach Kafka.
    #[serde(default = "default_retry_max", with = "humantime_serde")]
    pub retry_max: Duration,
    /// TLS and SASL to Kafka (`kafka::security`); none by default.
    #[serde(default)]
    pub security: KafkaSecurity,
}

pub(crate) fn default_topic() -> String {
    "{topic}".into()
}
pub(crate) fn default_separator() -> String {
    ".".into()
}
fn default_key() -> KeyFrom {
    KeyFrom::Topic
}
pub(crate) fn yes() -> bool {
    true
}
pub(crate) fn default_batch_records() -> usize {
    10_000
}
pub(crate) fn default_batch_bytes() -> ByteSize {
    ByteSize::kib(900)
}
fn one_i32() -> i32 {
    1
}
fn one_i16() -> i16 {
    1
}
pub(crate) fn default_retry_max() -> Duration {
    // A refused connection costs nothing; an outage's end should be noticed at once.
    Duration::from_millis(500)
}

impl KafkaOutConfig {
    /// A bridge of `stream` to `bootstrap` with every other setting at its default.
    pub fn new(stream: impl Into<String>, bootstrap: Vec<String>) -> Self {
        KafkaOutConfig {
            name: None,
            bootstrap,
            stream: stream.into(),
            filter: None,
            topic: default_topic(),
            topic_separator: default_separator(),
            key: default_key(),
            headers: true,
            batch_records: default_batch_records(),
            batch_bytes: default_batch_bytes(),
            compression: Compression::None,
            on_retention: OnRetention::Hold,
            start: Start::Earliest,
            create_topics: true,
            partitions: 1,
            replication: 1,
            retry_max: default_retry_max(),
            security: KafkaSecurity::default(),
        }
    }
}

/// One `[[bridge.mqtt]]`: a connection to another MQTT broker, as Mosquitto's bridge
/// (`connection` in mosquitto.conf) makes one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MqttConfig {
    /// The bridge's name (in the API, metrics, the saved position and the origin header of
    /// what comes in); default `mqtt-N`.
    #[serde(default)]
    pub name: Option<String>,
    /// The remote broker, `host:port` (the port defaults to 1883).
    pub address: String,
    /// The client id on the remote broker; default `fogline-<node id>-<name>`.
    #[serde(default)]
    pub remote_clientid: Option<String>,
    /// User name on the remote broker.
    #[serde(default)]
    pub remote_username: Option<String>,
    /// Password on the remote broker (needs `remote_username`).
    #[serde(default)]
    pub remote_password: Option<String>,
    /// PEM file of the CAs the remote broker's certificate must chain to; set, the bridge
    /// speaks MQTT over TLS, and the certificate must be valid for the host of `address` (a
    /// DNS name, or an IP address among its IP SANs). Mosquitto's `bridge_cafile`.
    #[serde(default)]
    pub bridge_cafile: Option<PathBuf>,
    /// PEM file of the bridge's client certificate (then its intermediates), for a remote
    /// that requires one (`bridge_certfile`; needs `bridge_keyfile`).
    #[serde(default)]
    pub bridge_certfile: Option<PathBuf>,
    /// PEM file of that certificate's private key (`bridge_keyfile`).
    #[serde(default)]
    pub bridge_keyfile: Option<PathBuf>,
    /// `false`: a persistent session on the remote broker (it keeps the subscriptions and
    /// queues QoS 1 messages for the bridge while it is away).
    #[serde(default)]
    pub cleansession: bool,
    /// MQTT keep-alive interval (5 s to 65535 s).
    #[serde(default = "default_keepalive", with = "humantime_serde")]
    pub keepalive: Duration,
    /// The local stream whose records go out (needed when a line is `out` or `both`).
    #[serde(default)]
    pub stream: Option<String>,
    /// Mosquitto `topic` lines: `PATTERN [[[out|in|both] QOS] LOCAL_PREFIX REMOTE_PREFIX]`.
    #[serde(default)]
    pub topics: Vec<String>,
    /// Most QoS 1 records out waiting for their PUBACK (the remote's receive maximum may
    /// lower it), and the receive maximum the bridge gives the remote for messages in.
    #[serde(default = "default_max_inflight")]
    pub max_inflight: u16,
    /// Where a new bridge starts in its stream.
    #[serde(default)]
    pub start: Start,
    /// Longest wait between two attempts to reach the remote broker.
    #[serde(default = "default_retry_max", with = "humantime_serde")]
    pub retry_max: Duration,
}

fn default_keepalive() -> Duration {
    Duration::from_secs(60)
}
fn default_max_inflight() -> u16 {
    20
}

impl MqttConfig {
    /// A bridge to `address` carrying `topics`, every other setting at its default.
    pub fn new(address: impl Into<String>, stream: Option<String>, topics: Vec<String>) -> Self {
        MqttConfig {
            name: None,
            address: address.into(),
            remote_clientid: None,
            remote_username: None,
            remote_password: None,
            bridge_cafile: None,
            bridge_certfile: None,
            bridge_keyfile: None,
            cleansession: false,
            keepalive: default_keepalive(),
            stream,
            topics,
            max_inflight: default_max_inflight(),
            start: Start::Earliest,
            retry_max: default_retry_max(),
        }
    }

    /// Whether the bridge speaks TLS to the remote broker.
    pub fn tls(&self) -> bool {
        self.bridge_cafile.is_some()
    }

    /// Its remote host and port (by default 1883, or 8883 with TLS).
    ///
    /// # Errors
    /// An address that is not `host` or `host:port`.
    pub fn host_port(&self) -> Result<(String, u16), String> {
        let a = self.address.trim();
        let bad = || format!("address {a:?} is not host:port");
        let (host, port) = match a.rsplit_once(':') {
            // A bare IPv6 address has colons but no port.
            Some((h, p)) if !h.contains(':') || h.ends_with(']') => {
                (h, p.parse::<u16>().map_err(|_| bad())?)
            }
            _ => (a, if self.tls() { 8883 } else { 1883 }),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() || port == 0 {
            return Err(bad());
        }
        Ok((host.to_string(), port))
    }

    fn check(&self) -> Result<(), String> {
        self.host_port()?;
        let topics = crate::mqtt::topic::Topics::parse(&self.topics).map_err(|e| e.to_string())?;
        if topics.0.is_empty() {
            return Err("no topics: add lines such as \"sensors/# out 1\"".into());
        }
        match &self.stream {
            None if topics.any_out() => {
                return Err("a topic goes out but no stream is given".into())
            }
            Some(s) if s.is_empty() => return Err("stream is empty".into()),
            _ => {}
        }
        if self.remote_password.is_some() && self.remote_username.is_none() {
            return Err("remote_password needs remote_username".into());
        }
        if self.bridge_certfile.is_some() != self.bridge_keyfile.is_some() {
            return Err("bridge_certfile and bridge_keyfile go together".into());
        }
        if self.bridge_certfile.is_some() && !self.tls() {
            return Err("a client certificate needs TLS: set bridge_cafile".into());
        }
        if self.remote_clientid.as_deref() == Some("") {
            return Err("remote_clientid is empty".into());
        }
        // The client refuses less than 5 s.
        if self.keepalive < Duration::from_secs(5) || self.keepalive.as_secs() > u64::from(u16::MAX)
        {
            return Err("keepalive is 5 s to 65535 s".into());
        }
        if self.max_inflight == 0 {
            return Err("max_inflight must be above 0".into());
        }
        Ok(())
    }
}

impl BridgeConfig {
    /// The bridges' names (given, or `kafka-N`, `kafka-in-N`, `mqtt-N`; in that order),
    /// checked: unique, and every bridge complete.
    ///
    /// # Errors
    /// What is wrong, naming the bridge.
    pub fn check(&self) -> Result<Vec<String>, String> {
        let mut names = self.check_out()?;
        crate::config_in::check(&self.kafka_in, &mut names)?;
        self.check_mqtt(&mut names)?;
        Ok(names)
    }

    fn check_mqtt(&self, names: &mut Vec<String>) -> Result<(), String> {
        for (i, m) in self.mqtt.iter().enumerate() {
            let name = bridge_name("mqtt", m.name.as_deref(), i, names)?;
            let err = |m: String| Err(format!("[[bridge.mqtt]] {name:?}: {m}"));
            if let Err(e) = m.check() {
                return err(e);
            }
            names.push(name);
        }
        Ok(())
    }

    fn check_out(&self) -> Result<Vec<String>, String> {
        let mut names: Vec<String> = Vec::new();
        for (i, k) in self.kafka.iter().enumerate() {
            let name = bridge_name("kafka", k.name.as_deref(), i, &names)?;
            let err = |m: String| Err(format!("[[bridge.kafka]] {name:?}: {m}"));
            if k.bootstrap.is_empty() {
                return err("bootstrap is empty".into());
            }
            if k.stream.is_empty() {
                return err("stream is empty".into());
            }
            if let Some(f) = &k.filter {
                if let Err(e) = fogline_wire::validate_filter(f) {
                    return err(format!("filter {f:?}: {e}"));
                }
            }
            if let Err(e) = crate::kafka::check_template(&k.topic) {
                return err(e);
            }
            if k.batch_records == 0 || k.batch_bytes.as_u64() == 0 {
                return err("batch_records and batch_bytes must be above 0".into());
            }
            if k.partitions < 1 || k.replication < 1 {
                return err("partitions and replication must be at least 1".into());
            }
            if let Err(e) = k.security.check() {
                return err(e);
            }
            names.push(name);
        }
        Ok(names)
    }
}

/// The name of the `i`-th `[[bridge.<table>]]`: `given`, or `<table>-N` with `_` as `-`
/// (`kafka-in-1`); checked to be a valid name that `taken` does not hold yet.
pub(crate) fn bridge_name(
    table: &str,
    given: Option<&str>,
    i: usize,
    taken: &[String],
) -> Result<String, String> {
    let name = given.map_or_else(
        || format!("{}-{}", table.replace('_', "-"), i + 1),
        str::to_string,
    );
    let err = |m: &str| Err(format!("[[bridge.{table}]] {name:?}: {m}"));
    let valid = (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !valid {
        return err("a name is 1 to 64 letters, digits, '-', '_' or '.'");
    }
    if taken.contains(&name) {
        return err("two bridges have this name");
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct File {
        bridge: BridgeConfig,
    }

    #[test]
    fn the_documented_section_is_the_default() {
        let f: File = toml::from_str(DEFAULT_SECTION).unwrap();
        assert_eq!(f.bridge, BridgeConfig::default());
    }

    #[test]
    fn the_documented_example_reads_and_checks() {
        // The commented example of the documented section, uncommented.
        let example: String = DEFAULT_SECTION
            .lines()
            .filter_map(|l| l.strip_prefix("# ").filter(|l| !l.starts_with(' ')))
            .filter(|l| l.starts_with('[') || l.contains(" = "))
            .collect::<Vec<_>>()
            .join("\n");
        let f: File = toml::from_str(&format!("[bridge]\n{example}")).unwrap();
        assert_eq!(f.bridge.kafka.len(), 1, "{example}");
        assert_eq!(f.bridge.kafka_in.len(), 1, "{example}");
        assert_eq!(f.bridge.kafka_in[0].group, "fogline-edge-1");
        assert_eq!(f.bridge.mqtt.len(), 1, "{example}");
        assert_eq!(f.bridge.check().unwrap(), ["core", "core-in", "upstream"]);
        assert_eq!(
            f.bridge.kafka[0].security.protocol,
            SecurityProtocol::SaslSsl
        );
        let m = &f.bridge.mqtt[0];
        assert_eq!(m.host_port().unwrap(), ("127.0.0.1".to_string(), 1884));
        assert!(!m.cleansession);
        let topics = crate::mqtt::topic::Topics::parse(&m.topics).unwrap();
        assert_eq!(
            topics.outgoing("sensors/a"),
            Some(("site1/sensors/a".to_string(), 1))
        );
        assert_eq!(
            topics.incoming("edge/shared/x"),
            Some("shared/x".to_string())
        );
        let k = &f.bridge.kafka[0];
        assert_eq!(k.key, KeyFrom::Topic);
        assert_eq!(k.on_retention, OnRetention::Hold);
    }

    #[test]
    fn bad_bridges_are_refused_with_their_name() {
        let mut c = BridgeConfig::default();
        c.kafka.push(KafkaOutConfig::new("s", vec![]));
        assert!(c
            .check()
            .unwrap_err()
            .contains("\"kafka-1\": bootstrap is empty"));
        c.kafka[0].bootstrap.push("127.0.0.1:9092".into());
        assert_eq!(c.check().unwrap(), ["kafka-1"]);
        c.kafka.push(KafkaOutConfig {
            name: Some("kafka-1".into()),
            ..c.kafka[0].clone()
        });
        assert!(c.check().unwrap_err().contains("two bridges"));
        c.kafka[1].name = Some("b".into());
        c.kafka[1].topic = "bad topic".into();
        assert!(c.check().unwrap_err().contains("\"b\""));
        c.kafka[1].topic = "t".into();
        c.kafka[1].filter = Some("a/#/b".into());
        assert!(c.check().unwrap_err().contains("filter"));
        let bad: Result<File, _> =
            toml::from_str("[[bridge.kafka]]\nbootstrap=['x:1']\nstream='s'\nkey='partition'\n");
        assert!(bad.err().unwrap().to_string().contains("header:NAME"));
    }

    #[test]
    fn bad_mqtt_bridges_are_refused_with_their_name() {
        let mut c = BridgeConfig::default();
        c.mqtt.push(MqttConfig::new(
            "127.0.0.1:1884",
            None,
            vec!["a/# in 1".into()],
        ));
        assert_eq!(c.check().unwrap(), ["mqtt-1"]);
        let refused = |m: MqttConfig, what: &str| {
            let c = BridgeConfig {
                mqtt: vec![m],
                ..BridgeConfig::default()
            };
            let e = c.check().unwrap_err();
            assert!(e.contains("\"mqtt-1\"") && e.contains(what), "{e}");
        };
        let ok = c.mqtt[0].clone();
        refused(
            MqttConfig {
                topics: vec!["a out 1".into()],
                ..ok.clone()
            },
            "no stream",
        );
        refused(
            MqttConfig {
                topics: vec![],
                ..ok.clone()
            },
            "no topics",
        );
        refused(
            MqttConfig {
                topics: vec!["a up".into()],
                ..ok.clone()
            },
            "direction",
        );
        refused(
            MqttConfig {
                address: "h:x".into(),
                ..ok.clone()
            },
            "host:port",
        );
        refused(
            MqttConfig {
                remote_password: Some("p".into()),
                ..ok.clone()
            },
            "needs",
        );
        refused(
            MqttConfig {
                max_inflight: 0,
                ..ok.clone()
            },
            "max_inflight",
        );
        refused(
            MqttConfig {
                keepalive: Duration::ZERO,
                ..ok.clone()
            },
            "keepalive",
        );
        refused(
            MqttConfig {
                bridge_cafile: Some("ca.crt".into()),
                bridge_certfile: Some("bridge.crt".into()),
                ..ok.clone()
            },
            "go together",
        );
        refused(
            MqttConfig {
                bridge_certfile: Some("bridge.crt".into()),
                bridge_keyfile: Some("bridge.key".into()),
                ..ok.clone()
            },
            "bridge_cafile",
        );
        let addr = |a: &str| {
            MqttConfig {
                address: a.into(),
                ..ok.clone()
            }
            .host_port()
            .unwrap()
        };
        assert_eq!(addr("broker"), ("broker".into(), 1883));
        let tls = MqttConfig {
            address: "broker".into(),
            bridge_cafile: Some("ca.crt".into()),
            ..ok.clone()
        };
        assert_eq!(tls.host_port().unwrap(), ("broker".into(), 8883));
        assert_eq!(addr("[::1]:1884"), ("::1".into(), 1884));
        assert_eq!(addr("::1"), ("::1".into(), 1883));
        c.kafka.push(KafkaOutConfig {
            name: Some("mqtt-1".into()),
            ..KafkaOutConfig::new("s", vec!["k:9092".into()])
        });
        assert!(c.check().unwrap_err().contains("two bridges"));
    }
}
