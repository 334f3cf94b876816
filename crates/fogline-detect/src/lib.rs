//! Online anomaly detectors for fogline, usable alone.
//!
//! - [`value`]: detectors for numeric streams. Each implements [`Detector`]:
//!   `update(timestamp, value) -> score in [0, 1]`, with state bounded by its
//!   parameters (never by the stream length) and O(1) or O(window) work per point.
//! - [`trace`]: detectors for timestamped event streams (arrival curves, spectra),
//!   plus a generator of normal and anomalous traces to evaluate them.
//! - [`nab`]: a scorer that follows the Numenta Anomaly Benchmark's rules
//!   (windows, probation, scaled sigmoid, profiles, threshold optimisation,
//!   normalisation) and runs any [`Detector`] over the NAB corpus.
//!
//! The crate has no networking and no threads; every detector is `Send`.
#![deny(missing_docs)]

pub mod nab;
pub mod trace;
pub mod value;

pub use value::{by_name, Detector, DETECTOR_NAMES};
