//! The broker's error type.

use fogline_log::LogError;

/// What can go wrong in the broker.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// A stream's log failed (disk full, I/O error, corrupt data).
    #[error("stream {stream}: {source}")]
    Storage {
        /// The stream.
        stream: String,
        /// What the log reported.
        #[source]
        source: LogError,
    },
    /// Readers hold the stream's retention (a bridge that has not forwarded its records)
    /// and it keeps as much past its retention as it may: it takes records again once they
    /// move on.
    #[error(
        "stream {stream}: retention is held by {holders}, who keep {held_bytes} bytes past it \
         (at most {max_bytes}); records are refused until they catch up"
    )]
    Held {
        /// The stream.
        stream: String,
        /// Who holds it.
        holders: String,
        /// Bytes kept past retention for them.
        held_bytes: u64,
        /// The most that may be.
        max_bytes: u64,
    },
    /// No stream by that name.
    #[error("unknown stream {0:?}")]
    UnknownStream(String),
    /// A stream of that name exists already.
    #[error("stream {0:?} exists already")]
    StreamExists(String),
    /// No durable consumer by that name on the stream.
    #[error("unknown consumer {0:?}")]
    UnknownConsumer(String),
    /// A request whose values cannot be applied (a stream setting, a change that is not
    /// allowed); the message says which and why.
    #[error("{0}")]
    Invalid(String),
    /// A topic that may not be published to.
    #[error("invalid topic: {0}")]
    InvalidTopic(String),
    /// A malformed subscription filter.
    #[error("invalid filter: {0}")]
    InvalidFilter(String),
    /// A record over the configured maximum.
    #[error("message of {size} bytes exceeds the maximum of {max} bytes")]
    MessageTooLarge {
        /// Payload plus headers.
        size: usize,
        /// The configured limit.
        max: usize,
    },
    /// A durable consumer name that breaks the naming rules (see
    /// [`valid_consumer_name`](crate::valid_consumer_name)).
    #[error("invalid consumer name {0:?}: use 1-64 of A-Z a-z 0-9 . _ -, not starting with '.'")]
    InvalidName(String),
    /// A batch of zero records: nothing to store or deliver.
    #[error("a publish must carry at least one record")]
    EmptyBatch,
    /// A durable consumer of that name is already open on the stream.
    #[error("durable consumer {0:?} is already open")]
    ConsumerInUse(String),
    /// A bad configuration value.
    #[error("configuration: {0}")]
    Config(String),
    /// The connection's user may not do this (the ACL); says what was refused.
    #[error("not authorized: {0}")]
    NotAuthorized(String),
    /// Filesystem trouble outside the log (directories, consumer positions).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

impl BrokerError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}
