//! One benchmark cell: what to run ([`CellSpec`]) and what came out ([`CellResult`]).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::accounting::Delivery;
use crate::driver::Durability;
use crate::latency::LatencySummary;
use crate::procstat::ServerUsage;
use crate::quiet::Noise;

/// How fast each producer sends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rate {
    /// As fast as the system accepts.
    Max,
    /// Messages per second per producer.
    Hz(f64),
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rate::Max => write!(f, "max"),
            Rate::Hz(h) => write!(f, "{h} Hz"),
        }
    }
}

/// The spacing of messages at a fixed rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pace {
    /// Exactly 1/rate apart (on a schedule, so delays do not accumulate).
    Fixed,
    /// Normally distributed gaps with mean 1/rate and this standard deviation, in seconds
    /// (seed003's "~1 s" producers).
    Normal(f64),
}

/// How much each producer sends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Budget {
    /// This many messages.
    Messages(u64),
    /// For this long (what it managed to send is what is expected).
    Time(Duration),
}

/// When the subscribers read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reading {
    /// Live, while the producers send.
    Live,
    /// After the producers finished, from the start of the stored topic (only the reading
    /// is timed; no latency).
    Replay,
}

/// Everything that defines one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSpec {
    /// Label of the cell within its scenario (e.g. "1 KiB @ 60 Hz").
    pub label: String,
    /// Requested message size in bytes (never below the 20-byte header on the wire).
    pub size: usize,
    /// Per-producer rate.
    pub rate: Rate,
    /// Spacing at a fixed rate.
    pub pace: Pace,
    /// Number of producers, each with its own connection.
    pub producers: u32,
    /// Number of subscribers, each with its own connection (0: producer alone).
    pub subscribers: u32,
    /// How much each producer sends.
    pub budget: Budget,
    /// Volatile or persistent.
    pub durability: Durability,
    /// Live or replay reading.
    pub reading: Reading,
    /// After the last send, how long to wait without progress for late messages.
    pub straggler_timeout: Duration,
    /// Messages per burst at maximum rate (flush after each).
    pub burst: usize,
}

impl CellSpec {
    /// A cell with the common defaults: one producer, one subscriber, fixed pace, volatile,
    /// live, 3 s straggler timeout, bursts of 64.
    pub fn new(label: impl Into<String>, size: usize, rate: Rate, budget: Budget) -> Self {
        Self {
            label: label.into(),
            size,
            rate,
            pace: Pace::Fixed,
            producers: 1,
            subscribers: 1,
            budget,
            durability: Durability::Volatile,
            reading: Reading::Live,
            straggler_timeout: Duration::from_secs(3),
            burst: 64,
        }
    }
}

/// What one run of a cell measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CellResult {
    /// The system's name.
    pub system: String,
    /// The cell.
    pub spec: CellSpec,
    /// Repetition number, from 1.
    pub repetition: u32,
    /// Bytes per message on the wire (the requested size, at least the header).
    pub wire_size: usize,
    /// Messages sent, all producers together.
    pub sent: u64,
    /// Delivery accounting over all subscribers.
    pub delivery: Delivery,
    /// Latency from the send timestamp to arrival (empty for replay and producer-only cells).
    pub latency: LatencySummary,
    /// Seconds from the first send to the last send.
    pub send_seconds: f64,
    /// Seconds from the first send (replay: first read) to the last arrival.
    pub elapsed_seconds: f64,
    /// Messages sent per second (all producers).
    pub publish_rate: f64,
    /// Distinct messages delivered per second, all subscribers together (producer alone:
    /// the publish rate).
    pub throughput_msgs: f64,
    /// The same in MB/s (10^6 bytes) of message size.
    pub throughput_mbps: f64,
    /// What the server process used (None for brokerless systems).
    pub server: Option<ServerUsage>,
    /// Other work on the machine during the measured phase (None where /proc is unreadable
    /// and in results older than the field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<Noise>,
    /// Errors the producers or subscribers hit (a cut-off subscriber shows up here and as
    /// loss).
    pub errors: Vec<String>,
}
