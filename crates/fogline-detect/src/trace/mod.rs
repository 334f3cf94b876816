//! Detectors for timestamped event streams (kernel traces, CAN frames, message
//! arrivals), learned on normal traces and run online.
//!
//! - [`arrival`]: inter-arrival curves (Salem, Crowley, Fischmeister, ECRTS 2016):
//!   per event type, the minimum and maximum time spanned by `k` consecutive
//!   events, `k = 2..=K`; an online monitor flags spans outside the learned
//!   bounds and silences longer than the largest learned gap.
//! - [`spectral`]: in the spirit of SiPTA (Zeinali Zadeh et al., EMSOFT 2014):
//!   per event type, counts per time bin form a signal; the magnitude spectrum of
//!   each window is compared with the reference spectra of normal traces.
//! - [`generate`]: periodic and sporadic task traces with injected anomalies
//!   (extra events, missing events, timing jitter, changed periods).
//! - [`evaluate`]: detection and false-positive rates of both detectors on
//!   generated traces.
//!
//! Times are nanoseconds (`u64`); event types are small integers (`u16`).
//! Events must arrive in non-decreasing time order.

pub mod arrival;
pub mod evaluate;
pub mod generate;
pub mod spectral;

/// One event of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    /// Time in nanoseconds.
    pub time: u64,
    /// Event type (task, CAN identifier, topic index...).
    pub kind: u16,
}
