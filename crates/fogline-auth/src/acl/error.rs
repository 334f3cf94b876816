//! Errors of reading an ACL file: each names the line (1-based) it is about.

use std::path::PathBuf;

/// Longest piece of a line quoted in an error: a topic may be 65,535 bytes long, a log line
/// should not be.
const QUOTE_MAX: usize = 80;

/// A line of an ACL file that Mosquitto would refuse; the whole file is refused with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ParseError {
    line: usize,
    kind: ParseErrorKind,
}

impl ParseError {
    pub(crate) fn new(line: usize, kind: ParseErrorKind) -> Self {
        ParseError { line, kind }
    }

    /// The line (1-based) that is wrong.
    pub fn line(&self) -> usize {
        self.line
    }

    /// What is wrong with it.
    pub fn kind(&self) -> &ParseErrorKind {
        &self.kind
    }
}

/// What is wrong with a line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The line is not UTF-8 (MQTT topics and usernames are).
    #[error("not UTF-8")]
    NotUtf8,
    /// The line holds a NUL byte, which no topic or username may hold.
    #[error("a NUL byte")]
    Nul,
    /// The first word is not `user`, `topic` or `pattern` (keywords are lower case, words
    /// are separated by spaces, and `#` starts a comment only in the first column).
    #[error("`{0}` is not `user`, `topic`, `pattern` or a comment (`#` in the first column)")]
    UnknownKeyword(String),
    /// `topic` or `pattern` with nothing after it.
    #[error("`{0}` without a topic")]
    MissingTopic(&'static str),
    /// The word before the topic is not `read`, `write`, `readwrite` or `deny` (a topic
    /// with a space needs the access word before it).
    #[error("access `{0}` is not `read`, `write`, `readwrite` or `deny`")]
    InvalidAccess(String),
    /// The topic is not a valid MQTT topic filter.
    #[error("topic `{topic}` {why}")]
    InvalidTopic {
        /// The topic (its start, when long).
        topic: String,
        /// Which rule it breaks.
        why: &'static str,
    },
    /// The file goes on past [`MAX_FILE_BYTES`](super::MAX_FILE_BYTES); the line is where.
    #[error("the file is larger than {} bytes", super::MAX_FILE_BYTES)]
    TooLarge,
    /// `user` with no name after it.
    #[error("`user` without a username")]
    MissingUsername,
}

/// Why [`Acl::load`](super::Acl::load) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read ACL file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_FILE_BYTES`](super::MAX_FILE_BYTES).
    #[error("ACL file {path} is larger than {limit} bytes")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit.
        limit: usize,
    },
    /// A line of the file is wrong.
    #[error("ACL file {path}, {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line and what is wrong with it.
        source: ParseError,
    },
}

/// The start of `s`, cut at a character boundary, for quoting in an error.
pub(crate) fn quote(s: &str) -> String {
    if s.len() <= QUOTE_MAX {
        return s.to_owned();
    }
    let mut end = QUOTE_MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}
