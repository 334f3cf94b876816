//! The `[bridge]` section: `[[bridge.kafka]]` tables, one per stream forwarded to Kafka, and
//! `[[bridge.kafka_in]]` tables, one per set of Kafka topics consumed into fogline.

use std::time::Duration;

use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

pub use crate::config_in::KafkaInConfig;

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
        }
    }
}

impl BridgeConfig {
    /// The bridges' names (given or `kafka-N`, then `kafka-in-N`), checked: unique, and
    /// every bridge complete.
    ///
    /// # Errors
    /// What is wrong, naming the bridge.
    pub fn check(&self) -> Result<Vec<String>, String> {
        let mut names = self.check_out()?;
        crate::config_in::check(&self.kafka_in, &mut names)?;
        Ok(names)
    }

    fn check_out(&self) -> Result<Vec<String>, String> {
        let mut names: Vec<String> = Vec::new();
        for (i, k) in self.kafka.iter().enumerate() {
            let name = k.name.clone().unwrap_or_else(|| format!("kafka-{}", i + 1));
            let err = |m: String| Err(format!("[[bridge.kafka]] {name:?}: {m}"));
            if !valid_name(&name) {
                return err("a name is 1 to 64 letters, digits, '-', '_' or '.'".into());
            }
            if names.contains(&name) {
                return err("two bridges have this name".into());
            }
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
            names.push(name);
        }
        Ok(names)
    }
}

pub(crate) fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
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
        assert_eq!(f.bridge.check().unwrap(), ["core", "core-in"]);
        assert_eq!(f.bridge.kafka_in[0].group, "fogline-edge-1");
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
}
