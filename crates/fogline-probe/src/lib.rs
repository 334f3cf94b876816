//! Probe messages and their accounting, shared by `fogline pub`/`fogline sub --json` and the
//! benchmark harness (`fogline-bench`), so a deployment can be checked with the same
//! measure the benchmarks use.
//!
//! - [`payload`]: the message format (producer id, sequence number, send time, padding).
//! - [`clock`]: the one clock senders and receivers read (`CLOCK_MONOTONIC`).
//! - [`accounting`]: loss, duplicates and reordering from sequence numbers.
//! - [`latency`]: HDR histograms of one-way latency.
#![deny(missing_docs)]

pub mod accounting;
pub mod clock;
pub mod latency;
pub mod payload;
