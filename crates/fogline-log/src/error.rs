//! The log's error type.

use std::io;
use std::path::PathBuf;

/// Errors from the log. Corrupt data found while opening is repaired and reported in a
/// [`RecoveryReport`](crate::RecoveryReport) instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LogError {
    /// A file or directory operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A record's encoded size exceeds `max_record_bytes`.
    #[error("record of {size} bytes exceeds the limit of {max} bytes")]
    RecordTooLarge {
        /// Encoded size of the record.
        size: u64,
        /// The configured limit.
        max: u32,
    },
    /// `mmap` and `fsync` storage need `LogOptions::dir`.
    #[error("storage `{0}` needs a directory")]
    NoDirectory(crate::Storage),
    /// Another process (or another `Log` in this one) has the stream directory open.
    #[error("stream directory {0} is in use by another log")]
    Locked(PathBuf),
    /// A record with an empty topic was appended: the log keeps that form for its marks of
    /// lost records.
    #[error("a record needs a topic")]
    EmptyTopic,
    /// An unknown storage name was parsed.
    #[error("unknown storage `{0}` (expected memory, mmap or fsync)")]
    UnknownStorage(String),
    /// A record inside the readable range is damaged: a sealed segment trusted at open on its
    /// index failed its CRC on read, or the mapped data changed under the log (another
    /// process wrote it). Nothing from the damaged record is served; reading can go on at
    /// `resume`, the next valid record, and `fogline log verify --repair` marks the damaged
    /// records as lost and keeps the rest.
    #[error(
        "segment {base}: record {offset} is damaged ({damage}, at byte {pos}); the next intact record is {resume}"
    )]
    Corrupt {
        /// The segment's base offset.
        base: u64,
        /// Byte position in the segment.
        pos: usize,
        /// The offset expected there.
        offset: u64,
        /// What is wrong.
        damage: crate::Damage,
        /// The next offset that may hold an intact record.
        resume: u64,
    },
    /// Offset `offset` has no record: recovery found offsets `first..resume` damaged and
    /// dropped them (and reported it), or the segment that held them is missing.
    #[error("record {offset} was lost (offsets {first}..{resume} are gone); the next record is {resume}")]
    Lost {
        /// The offset asked for.
        offset: u64,
        /// First offset lost.
        first: u64,
        /// The offset after the last one lost: reading can go on there.
        resume: u64,
    },
}

impl LogError {
    /// True when the file system is out of space (or of the user's quota).
    pub fn is_storage_full(&self) -> bool {
        match self {
            LogError::Io { source, .. } => {
                matches!(
                    source.kind(),
                    io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
                ) || matches!(source.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT))
            }
            _ => false,
        }
    }

    /// Where reading can go on when this error says some offsets hold no intact record
    /// (`Corrupt` or `Lost`).
    pub fn resume(&self) -> Option<u64> {
        match self {
            LogError::Corrupt { resume, .. } | LogError::Lost { resume, .. } => Some(*resume),
            _ => None,
        }
    }

    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> LogError {
        let path = path.into();
        move |source| LogError::Io { op, path, source }
    }
}
