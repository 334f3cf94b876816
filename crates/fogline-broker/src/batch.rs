//! The unit the broker routes: one publish frame's records on one topic.

use fogline_wire::{RecordBlock, Str};

/// Records published together on one topic, kept as the publisher's verbatim
/// record block so the same bytes go from the socket to every subscriber.
#[derive(Debug)]
pub struct Batch {
    /// The topic (validated, no wildcards).
    pub topic: Str,
    /// The records, in the wire crate's record-block layout.
    pub records: RecordBlock,
    /// Server receive time in microseconds since the UNIX epoch; records
    /// published with timestamp 0 take it.
    pub timestamp: u64,
    /// High-priority records overtake bulk traffic on every queue.
    pub priority: bool,
    /// Id of the publishing connection or session (for MQTT's no-local).
    pub origin: u64,
}

impl Batch {
    /// Bytes this batch counts against queue limits.
    pub fn weight(&self) -> usize {
        self.records.as_bytes().len() + self.topic.len()
    }

    /// Number of records.
    pub fn count(&self) -> u32 {
        self.records.count()
    }
}

/// Current time in microseconds since the UNIX epoch.
pub fn now_micros() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}
