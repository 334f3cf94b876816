//! What can go wrong with a password file.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// An error reading, changing or writing a password file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file could not be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file (or, for a failed `fsync`, its directory).
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The file is larger than the limit it was read with.
    #[error("{}: larger than {limit} bytes", .path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit, in bytes.
        limit: u64,
    },
    /// A line that is neither a comment, blank nor `user:hash`.
    #[error("{}line {line}: {problem}", in_file(.path.as_deref()))]
    Malformed {
        /// The file, when it was read from one.
        path: Option<PathBuf>,
        /// Its line number, from 1.
        line: usize,
        /// What is wrong with it.
        problem: Problem,
    },
    /// A user name that cannot be written to a password file.
    #[error("invalid user name: {0}")]
    UserName(UserNameError),
    /// PBKDF2 iterations outside 1 to [`super::MAX_ITERATIONS`].
    #[error("{0} iterations: must be 1 to {max}", max = super::MAX_ITERATIONS)]
    Iterations(u32),
    /// The system gave no random numbers for a salt.
    #[error("no random salt: {0}")]
    Random(getrandom::Error),
}

fn in_file(path: Option<&Path>) -> String {
    path.map(|p| format!("{}, ", p.display()))
        .unwrap_or_default()
}

/// What is wrong with a line of a password file.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// Not UTF-8 (MQTT user names are).
    NotUtf8,
    /// No `:` between user and hash.
    NoColon,
    /// The user name is not one a client can send.
    UserName(UserNameError),
    /// The same user on an earlier line.
    Duplicate {
        /// That line, from 1.
        first: usize,
    },
    /// No hash after the `:`, or a plain-text password (Mosquitto reads only hashes).
    NotHashed,
    /// A hash type other than `$6$` and `$7$`.
    Scheme,
    /// `$7$` iterations that are not a number from 1 to [`super::MAX_ITERATIONS`].
    Iterations,
    /// A salt that is not base64 of 1 to 64 bytes.
    Salt,
    /// A hash that is not base64 of 64 bytes.
    Hash,
    /// More `$` or `:` fields after the hash.
    TrailingField,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::NotUtf8 => f.write_str("not UTF-8"),
            Problem::NoColon => f.write_str("no `:` between user and password hash"),
            Problem::UserName(e) => write!(f, "user name {e}"),
            Problem::Duplicate { first } => write!(f, "user already on line {first}"),
            Problem::NotHashed => f.write_str(
                "no password hash (a plain-text password? hash it with `fogline passwd`)",
            ),
            Problem::Scheme => f.write_str("unknown hash type (not $6$ or $7$)"),
            Problem::Iterations => write!(
                f,
                "$7$ iterations not a number from 1 to {}",
                super::MAX_ITERATIONS
            ),
            Problem::Salt => f.write_str("salt is not base64 of 1 to 64 bytes"),
            Problem::Hash => f.write_str("hash is not base64 of 64 bytes"),
            Problem::TrailingField => f.write_str("more fields after the hash"),
        }
    }
}

/// Why a user name cannot be in a password file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UserNameError {
    /// Empty.
    #[error("is empty")]
    Empty,
    /// Longer than an MQTT string (65,535 bytes).
    #[error("is longer than 65535 bytes")]
    TooLong,
    /// Has a `:`, which ends a user name in the file.
    #[error("contains `:`")]
    Colon,
    /// Has a control character (a newline would split its line).
    #[error("contains a control character")]
    Control,
    /// Starts or ends with a blank, which Mosquitto trims away when it reads the file.
    #[error("starts or ends with a blank")]
    Blank,
    /// Starts with `#`: Mosquitto reads that line as a comment.
    #[error("starts with `#`")]
    Hash,
}
