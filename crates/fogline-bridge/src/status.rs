//! What each bridge reports: its state, counts and lag, shared between the bridge's task
//! (which writes them) and the REST routes, `/metrics` and the dashboard (which read them).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;
use serde::Serialize;

/// Which way a bridge carries records, and to what.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A stream to Kafka (`[[bridge.kafka]]`).
    KafkaOut,
    /// Kafka topics into fogline (`[[bridge.kafka_in]]`).
    KafkaIn,
    /// To and from another MQTT broker (`[[bridge.mqtt]]`).
    Mqtt,
}

impl Kind {
    /// Its name in metrics and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::KafkaOut => "kafka_out",
            Kind::KafkaIn => "kafka_in",
            Kind::Mqtt => "mqtt",
        }
    }
}

/// Where a bridge is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Connecting to the other side (first time, or again after a failure).
    Connecting,
    /// Connected; carrying records or waiting for more.
    Running,
    /// The other side cannot be reached or failed; records wait (in the stream) and the
    /// bridge tries again.
    Down,
    /// Stopped with the node.
    Stopped,
}

impl State {
    /// Every state, for `/metrics`.
    pub const ALL: [State; 4] = [
        State::Connecting,
        State::Running,
        State::Down,
        State::Stopped,
    ];

    /// Its name in metrics and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Connecting => "connecting",
            State::Running => "running",
            State::Down => "down",
            State::Stopped => "stopped",
        }
    }
}

#[derive(Debug)]
struct Phase {
    state: State,
    since_us: u64,
    last_error: Option<String>,
    last_error_us: u64,
}

/// One bridge's live status. Counters only grow; gauges are set by the bridge.
#[derive(Debug)]
pub struct BridgeStatus {
    /// Its configured name.
    pub name: String,
    /// What it is.
    pub kind: Kind,
    /// Where it goes or comes from, for people (`kafka 127.0.0.1:9092 -> site.{topic}`).
    pub target: String,
    phase: Mutex<Phase>,
    /// Records carried and acknowledged by the other side (out) or stored here (in).
    pub records: AtomicU64,
    /// Their payload bytes.
    pub bytes: AtomicU64,
    /// Failures: connections lost or refused, requests that failed.
    pub errors: AtomicU64,
    /// Records lost before they were carried: dropped by the stream's retention
    /// (`on_retention = "drop"`), or, consuming from Kafka, by Kafka's retention or for
    /// being over fogline's message size limit.
    pub dropped: AtomicU64,
    /// Records found already carried when resuming, and so not carried again (Kafka in:
    /// stored in the streams but not yet committed).
    pub skipped: AtomicU64,
    /// Records the other side may hold twice (MQTT QoS 1 resent after a reconnect).
    pub duplicates: AtomicU64,
    /// Records waiting to be carried.
    pub lag_records: AtomicU64,
    /// Age of the oldest record waiting, microseconds (0 when none waits); Kafka in: of the
    /// newest record stored while records wait.
    pub lag_us: AtomicU64,
}

/// Microseconds since the UNIX epoch.
pub fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

impl BridgeStatus {
    /// A bridge that is about to connect.
    pub fn new(name: impl Into<String>, kind: Kind, target: impl Into<String>) -> Arc<Self> {
        Arc::new(BridgeStatus {
            name: name.into(),
            kind,
            target: target.into(),
            phase: Mutex::new(Phase {
                state: State::Connecting,
                since_us: now_us(),
                last_error: None,
                last_error_us: 0,
            }),
            records: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            lag_records: AtomicU64::new(0),
            lag_us: AtomicU64::new(0),
        })
    }

    /// Moves to `state` (a no-op when already there).
    pub fn set_state(&self, state: State) {
        let mut p = self.phase.lock();
        if p.state != state {
            p.state = state;
            p.since_us = now_us();
        }
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.phase.lock().state
    }

    /// A failure: counted, kept as the last error, and the bridge is `Down`.
    pub fn fail(&self, error: impl std::fmt::Display) {
        self.errors.fetch_add(1, Relaxed);
        let mut p = self.phase.lock();
        p.last_error = Some(error.to_string());
        p.last_error_us = now_us();
        if p.state != State::Down {
            p.state = State::Down;
            p.since_us = p.last_error_us;
        }
    }

    /// `n` records of `bytes` payload bytes carried.
    pub fn carried(&self, n: u64, bytes: u64) {
        self.records.fetch_add(n, Relaxed);
        self.bytes.fetch_add(bytes, Relaxed);
    }

    /// Sets the lag: `records` waiting, the oldest of them stamped `oldest_us` (0: none).
    pub fn set_lag(&self, records: u64, oldest_us: u64) {
        self.lag_records.store(records, Relaxed);
        let age = if records == 0 || oldest_us == 0 {
            0
        } else {
            now_us().saturating_sub(oldest_us)
        };
        self.lag_us.store(age, Relaxed);
    }

    /// A copy for the API.
    pub fn snapshot(&self) -> Snapshot {
        let p = self.phase.lock();
        Snapshot {
            name: self.name.clone(),
            kind: self.kind,
            target: self.target.clone(),
            state: p.state,
            state_since_us: p.since_us,
            last_error: p.last_error.clone(),
            last_error_us: p.last_error_us,
            records: self.records.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            errors: self.errors.load(Relaxed),
            dropped: self.dropped.load(Relaxed),
            skipped: self.skipped.load(Relaxed),
            duplicates: self.duplicates.load(Relaxed),
            lag_records: self.lag_records.load(Relaxed),
            lag_seconds: self.lag_us.load(Relaxed) as f64 / 1e6,
        }
    }
}

/// A bridge's status as the API serves it.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    /// Configured name.
    pub name: String,
    /// What it is.
    pub kind: Kind,
    /// Where it goes or comes from.
    pub target: String,
    /// Where it is.
    pub state: State,
    /// Since when, microseconds since the epoch.
    pub state_since_us: u64,
    /// The last failure, if any.
    pub last_error: Option<String>,
    /// When it happened (0: never).
    pub last_error_us: u64,
    /// Records carried.
    pub records: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// Failures.
    pub errors: u64,
    /// Records retention dropped before they were forwarded.
    pub dropped: u64,
    /// Records found already forwarded when resuming.
    pub skipped: u64,
    /// Records the other side may hold twice.
    pub duplicates: u64,
    /// Records waiting.
    pub lag_records: u64,
    /// Age of the oldest record waiting, seconds.
    pub lag_seconds: f64,
}

/// Every bridge of the node.
#[derive(Clone, Debug, Default)]
pub struct Bridges {
    list: Arc<Mutex<Vec<Arc<BridgeStatus>>>>,
}

impl Bridges {
    /// Adds a bridge's status.
    pub fn add(&self, status: Arc<BridgeStatus>) {
        self.list.lock().push(status);
    }

    /// Snapshots of them all, in configuration order.
    pub fn snapshots(&self) -> Vec<Snapshot> {
        self.list.lock().iter().map(|s| s.snapshot()).collect()
    }

    /// Every bridge's status.
    pub fn list(&self) -> Vec<Arc<BridgeStatus>> {
        self.list.lock().clone()
    }

    /// One bridge by name.
    pub fn get(&self, name: &str) -> Option<Arc<BridgeStatus>> {
        self.list.lock().iter().find(|s| s.name == name).cloned()
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.list.lock().len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_counted_kept_and_makes_the_bridge_down() {
        let s = BridgeStatus::new("core", Kind::KafkaOut, "kafka x");
        assert_eq!(s.state(), State::Connecting);
        s.set_state(State::Running);
        s.fail("connection refused");
        let snap = s.snapshot();
        assert_eq!(snap.state, State::Down);
        assert_eq!(snap.errors, 1);
        assert_eq!(snap.last_error.as_deref(), Some("connection refused"));
        s.carried(3, 30);
        s.set_lag(0, 5);
        let snap = s.snapshot();
        assert_eq!((snap.records, snap.bytes, snap.lag_seconds), (3, 30, 0.0));
    }

    #[test]
    fn lag_age_is_measured_from_the_oldest_waiting_record() {
        let s = BridgeStatus::new("core", Kind::KafkaOut, "kafka x");
        s.set_lag(10, now_us() - 2_000_000);
        let age = s.snapshot().lag_seconds;
        assert!((2.0..60.0).contains(&age), "{age}");
    }
}
