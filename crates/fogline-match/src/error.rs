//! The crate's one error type: opaque, with a kind that callers can only read as text.

use std::fmt;

/// Why a matcher could not be built.
///
/// Opaque on purpose: the variants are an implementation detail; match on the message only for
/// logging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ErrorKind {
    /// More patterns than the internal `u32` indexes can address.
    TooManyPatterns(usize),
    /// A pattern longer than [`crate::MAX_PATTERN_LEN`].
    PatternTooLong { index: usize, len: usize },
    /// The total pattern bytes do not fit the internal `u32` arena offsets.
    TooManyBytes(usize),
    /// A forced SIMD implementation that this CPU does not support.
    Unsupported(&'static str),
}

impl Error {
    pub(crate) fn new(kind: ErrorKind) -> Self {
        Error { kind }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ErrorKind::TooManyPatterns(n) => write!(f, "too many patterns: {n}"),
            ErrorKind::PatternTooLong { index, len } => write!(
                f,
                "pattern {index} is {len} bytes long; the limit is {}",
                crate::MAX_PATTERN_LEN
            ),
            ErrorKind::TooManyBytes(n) => write!(f, "patterns hold {n} bytes in total; too many"),
            ErrorKind::Unsupported(what) => write!(f, "this CPU does not support {what}"),
        }
    }
}

impl std::error::Error for Error {}
