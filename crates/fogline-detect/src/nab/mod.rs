//! The Numenta Anomaly Benchmark (NAB v1.1) scorer, reimplemented from NAB's
//! documented rules.
//!
//! Stages, one module each:
//! 1. [`corpus`]: load `data/**/*.csv`, `labels/combined_windows.json` and
//!    `config/profiles.json` from a NAB directory.
//! 2. [`sweep`]: give every row of a file its weighted score as a detection
//!    (scaled sigmoid of its position relative to the anomaly windows), or mark it
//!    probationary.
//! 3. [`threshold`]: sweep the detection threshold over all rows of the corpus at
//!    once and keep the threshold with the best total (one threshold per profile).
//! 4. [`board`]: run detectors over the corpus and normalise each raw score
//!    against the null detector (0) and the perfect detector (100).
//!
//! [`results`] reads detector outputs in NAB's own results layout, so that the
//! scorer can be checked against NAB's published scoreboard.

pub mod board;
pub mod corpus;
pub mod results;
pub mod sweep;
pub mod threshold;
pub mod time;

pub use board::{evaluate, evaluate_at, run_detector, BoardRow, ProfileScore};
pub use corpus::{Corpus, DataFile, Profile};

use std::path::PathBuf;

/// Errors from loading NAB files.
#[derive(Debug, thiserror::Error)]
pub enum NabError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A JSON file did not have the expected shape.
    #[error("bad JSON in {path}: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: serde_json::Error,
    },
    /// A CSV row could not be parsed.
    #[error("{path}:{line}: {reason}")]
    Row {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        reason: String,
    },
    /// Labels name a file or a window that the data does not have.
    #[error("labels: {0}")]
    Labels(String),
    /// Detector scores do not fit the corpus (count, length or range).
    #[error("scores: {0}")]
    Scores(String),
}
