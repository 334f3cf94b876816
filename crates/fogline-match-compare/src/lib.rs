//! Comparison harness for `fogline-match`: loaders for the shared data formats, one [`Engine`]
//! trait implemented by fogline-match and its peers (Hyperscan, aho-corasick NFA and DFA,
//! daachorse), a runner that times them single-threaded on the same inputs and checks that
//! they agree, and JSON/Markdown reports. Used by `fogline-bench match` and by the
//! `fogline-match-bench` binary.
#![deny(missing_docs)]

pub mod engines;
mod error;
pub mod load;
pub mod report;
pub mod run;

pub use engines::{build_engine, Engine, EngineKind};
pub use error::Error;
pub use load::{load_packets, load_patterns, random_bytes, Input, PatternLine};
pub use run::{run_cell, run_engine, Mode, Row};
