//! Broker configuration: streams, queue limits and the slow-consumer policy.
//!
//! Every type here is deserialised from the node's TOML file with
//! `deny_unknown_fields`, so a misspelt key is an error that names it. `broker.toml` is the
//! documented default of the `[broker]` section.

use std::path::PathBuf;
use std::time::Duration;

use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

/// The documented default of the `[broker]` section.
pub const DEFAULT_SECTION: &str = include_str!("broker.toml");

/// What a subscription queue does when it is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlowConsumerPolicy {
    /// The publisher waits for room (TCP back-pressure reaches the producer).
    /// A subscriber that stays full for longer than `block_timeout` is
    /// disconnected, so one dead reader cannot stall a producer forever.
    Block,
    /// The oldest queued records are dropped; the subscriber is told how many
    /// in its next delivery (`dropped`) and the broker counts them.
    DropOldest,
    /// The subscriber is disconnected with a `SlowConsumer` error.
    Disconnect,
}

impl std::str::FromStr for SlowConsumerPolicy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "block" => Ok(Self::Block),
            "drop-oldest" => Ok(Self::DropOldest),
            "disconnect" => Ok(Self::Disconnect),
            other => Err(format!(
                "unknown slow-consumer policy {other:?} (expected block, drop-oldest or disconnect)"
            )),
        }
    }
}

/// How a stream keeps its records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StorageMode {
    /// No files; records live in memory until retention drops them.
    Memory,
    /// Memory-mapped files: an acknowledged record survives a crash of the server process.
    Mmap,
    /// Memory-mapped files synced before the acknowledgement: survives power loss.
    Fsync,
}

impl StorageMode {
    /// The log crate's name for this mode.
    pub fn to_log(self) -> fogline_log::Storage {
        match self {
            Self::Memory => fogline_log::Storage::Memory,
            Self::Mmap => fogline_log::Storage::Mmap,
            Self::Fsync => fogline_log::Storage::Fsync,
        }
    }
}

impl std::str::FromStr for StorageMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "memory" => Ok(Self::Memory),
            "mmap" => Ok(Self::Mmap),
            "fsync" => Ok(Self::Fsync),
            other => Err(format!(
                "unknown storage mode {other:?} (expected memory, mmap or fsync)"
            )),
        }
    }
}

/// One stream: a log capturing every record whose topic matches a subject filter.
///
/// Retention: `None` takes the broker's default, a limit of zero means none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamConfig {
    /// Stream name: letters, digits, `-`, `_` and `.` (see [`valid_stream_name`]).
    pub name: String,
    /// Topic filters (MQTT syntax) whose records this stream captures.
    pub subjects: Vec<String>,
    /// Storage mode; the server's default when absent.
    #[serde(default)]
    pub storage: Option<StorageMode>,
    /// Drop whole oldest segments while the stream is larger than this (0: no limit).
    #[serde(default)]
    pub retention_bytes: Option<ByteSize>,
    /// Drop whole segments whose newest record is older than this (0: no limit).
    #[serde(default, with = "humantime_serde")]
    pub retention_age: Option<Duration>,
    /// Size of one segment file.
    #[serde(default)]
    pub segment_bytes: Option<ByteSize>,
    /// The `CREATE STREAM` statement that gives the stream a schema and a format for SQL
    /// rules (one notion of stream: a SQL source is a stream). The broker keeps it and
    /// does not read it.
    #[serde(default)]
    pub sql: Option<String>,
}

/// Settings of the broker core.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BrokerConfig {
    /// Where file-backed streams keep their logs (one directory per stream).
    pub data_dir: PathBuf,
    /// Default storage mode for streams that do not name one.
    pub storage: StorageMode,
    /// Largest accepted record payload.
    pub max_message_bytes: ByteSize,
    /// Default retention by size for streams that set none (0: no limit).
    pub retention_bytes: Option<ByteSize>,
    /// Default retention by age for streams that set none (0: no limit).
    #[serde(with = "humantime_serde")]
    pub retention_age: Option<Duration>,
    /// Default retention by size for `memory` streams that set none (RAM is
    /// scarcer than disk on an edge board).
    pub memory_retention_bytes: ByteSize,
    /// Default segment size.
    pub segment_bytes: ByteSize,
    /// How far past its retention a stream may grow while a reader (a bridge) holds its
    /// retention; past it the stream refuses records. A stream with a size limit may grow by
    /// that limit again at most (so a held stream stays within twice the space it was given).
    pub retention_hold_max: ByteSize,
    /// Streams; when empty a stream named `default` captures every topic.
    pub streams: Vec<StreamConfig>,
    /// Limits and policy of each live subscription's queue.
    pub subscriptions: QueueConfig,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from("fogline-data"),
            storage: StorageMode::Mmap,
            max_message_bytes: ByteSize::mib(16),
            retention_bytes: Some(ByteSize::gib(1)),
            retention_age: Some(Duration::from_secs(7 * 24 * 3600)),
            memory_retention_bytes: ByteSize::mib(128),
            segment_bytes: ByteSize::mib(64),
            retention_hold_max: ByteSize::gib(1),
            streams: Vec::new(),
            subscriptions: QueueConfig::default(),
        }
    }
}

/// Bounds of one subscription queue and what happens when they are reached.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueConfig {
    /// Most records queued for one subscription.
    pub max_records: usize,
    /// Most payload bytes queued for one subscription.
    pub max_bytes: ByteSize,
    /// Policy when either bound is reached (a subscriber may ask for another).
    pub policy: SlowConsumerPolicy,
    /// With `block`: how long a publisher waits before the subscriber is cut off.
    #[serde(with = "humantime_serde")]
    pub block_timeout: Duration,
}

impl Default for QueueConfig {
    fn default() -> Self {
        Self {
            max_records: 65_536,
            max_bytes: ByteSize::mib(64),
            policy: SlowConsumerPolicy::Block,
            block_timeout: Duration::from_secs(10),
        }
    }
}

impl StreamConfig {
    /// A stream with the broker's default storage and retention.
    pub fn new(name: impl Into<String>, subjects: Vec<String>) -> StreamConfig {
        StreamConfig {
            name: name.into(),
            subjects,
            storage: None,
            retention_bytes: None,
            retention_age: None,
            segment_bytes: None,
            sql: None,
        }
    }
}

/// Names of the node's own directories in `data_dir`, which no stream may take.
pub const RESERVED_NAMES: [&str; 2] = ["mqtt", "node"];

/// Checks a stream name: non-empty, at most 64 bytes of `[A-Za-z0-9._-]`,
/// not starting with a dot (it becomes a directory name), not one of [`RESERVED_NAMES`].
pub fn valid_stream_name(name: &str) -> bool {
    valid_file_name(name) && !RESERVED_NAMES.contains(&name)
}

/// Whether `name` may name a durable consumer: its position is kept in a file of that
/// name, so the rule is the stream names' (no path separators, no leading '.').
pub fn valid_consumer_name(name: &str) -> bool {
    valid_file_name(name)
}

fn valid_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_names() {
        assert!(valid_stream_name("default"));
        assert!(valid_stream_name("robot-7.lidar_raw"));
        assert!(!valid_stream_name(""));
        assert!(!valid_stream_name(".."));
        assert!(!valid_stream_name("a/b"));
        assert!(!valid_stream_name(&"x".repeat(65)));
        assert!(!valid_stream_name("mqtt"), "the MQTT state's directory");
        assert!(!valid_stream_name("node"), "the node's own directory");
    }

    #[test]
    fn policies_parse() {
        assert_eq!(
            "drop-oldest".parse::<SlowConsumerPolicy>(),
            Ok(SlowConsumerPolicy::DropOldest)
        );
        assert!("drop".parse::<SlowConsumerPolicy>().is_err());
        assert_eq!("fsync".parse::<StorageMode>(), Ok(StorageMode::Fsync));
    }
}
