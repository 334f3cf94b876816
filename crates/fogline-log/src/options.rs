//! Configuration and the record type.

use crate::LogError;
use bytes::Bytes;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// Where a log keeps its records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Storage {
    /// Anonymous memory; lost when the process ends.
    #[default]
    Memory,
    /// Memory-mapped files; a committed record survives `kill -9` of the process.
    Mmap,
    /// Memory-mapped files synced on every commit; a committed record survives power loss.
    Fsync,
}

impl Storage {
    /// The configuration name: `memory`, `mmap` or `fsync`.
    pub fn as_str(self) -> &'static str {
        match self {
            Storage::Memory => "memory",
            Storage::Mmap => "mmap",
            Storage::Fsync => "fsync",
        }
    }
}

impl fmt::Display for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Storage {
    type Err = LogError;

    fn from_str(s: &str) -> Result<Storage, LogError> {
        match s {
            "memory" => Ok(Storage::Memory),
            "mmap" => Ok(Storage::Mmap),
            "fsync" => Ok(Storage::Fsync),
            other => Err(LogError::UnknownStorage(other.to_string())),
        }
    }
}

/// Options for [`Log::open`](crate::Log::open).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogOptions {
    /// Storage mode.
    pub storage: Storage,
    /// The stream's directory (created if missing); required for `Mmap` and `Fsync`.
    pub dir: Option<PathBuf>,
    /// Preallocated size of a segment (clamped to 64 B ..= 4 GiB - 1). A record larger than a
    /// segment gets a segment sized for it.
    pub segment_bytes: u64,
    /// Whole oldest segments are dropped while the log holds more bytes than this (never the
    /// active segment).
    pub retention_bytes: Option<u64>,
    /// Whole segments whose newest record is older than this are dropped.
    pub retention_age: Option<Duration>,
    /// Largest encoded record (payload + topic + headers + [`RECORD_OVERHEAD`](crate::RECORD_OVERHEAD)).
    pub max_record_bytes: u32,
    /// Run the housekeeping (a sealed segment's file work, removals, drop-behind, the next
    /// segment's file) on the appending thread instead of a thread of the log's: rolls cost
    /// what that work costs, but everything happens in one order, so a test replays exactly.
    pub inline_housekeeping: bool,
}

/// Default segment size: 64 MiB.
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;
/// Default record limit: a 16 MiB payload plus 64 KiB for topic, headers and fixed fields.
pub const DEFAULT_MAX_RECORD_BYTES: u32 = (16 << 20) + (64 << 10);

impl Default for LogOptions {
    fn default() -> LogOptions {
        LogOptions {
            storage: Storage::Memory,
            dir: None,
            segment_bytes: DEFAULT_SEGMENT_BYTES,
            retention_bytes: None,
            retention_age: None,
            max_record_bytes: DEFAULT_MAX_RECORD_BYTES,
            inline_housekeeping: false,
        }
    }
}

/// A record read from the log. The `Bytes` share the log's memory (no copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Position in the log.
    pub offset: u64,
    /// Microseconds since the UNIX epoch.
    pub timestamp: u64,
    /// Topic name.
    pub topic: Bytes,
    /// Encoded header block, stored verbatim (its layout belongs to the wire crate).
    pub headers: Bytes,
    /// Payload.
    pub payload: Bytes,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_names_round_trip() {
        for s in [Storage::Memory, Storage::Mmap, Storage::Fsync] {
            assert_eq!(s.to_string().parse::<Storage>().unwrap(), s);
        }
        assert!(matches!(
            "disk".parse::<Storage>(),
            Err(LogError::UnknownStorage(_))
        ));
    }
}
