//! Errors of the comparison harness.

use std::path::PathBuf;

/// Why loading data or building an engine failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file does not follow its shared format.
    #[error("{path}:{line}: {what}")]
    Format {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        what: String,
    },
    /// An engine rejected the pattern set.
    #[error("building {engine}: {message}")]
    Build {
        /// The engine.
        engine: &'static str,
        /// Its message.
        message: String,
    },
    /// An engine name that is not known (or not compiled in).
    #[error("unknown or unavailable engine {0:?} (known: {1})")]
    UnknownEngine(String, String),
}
