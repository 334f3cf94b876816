//! fogline's benchmark harness: the same experiments as the source studies, against fogline
//! and the real peer systems, on the same machine, in one run.
//!
//! - [`driver`]: the [`Driver`] / [`Publisher`] / [`Subscriber`] traits every system plugs
//!   in through; [`drivers`] holds one module per system.
//! - [`payload`]: the message format (producer id, sequence number, send timestamp, padding).
//! - [`accounting`]: loss, duplicates and reordering from sequence numbers.
//! - [`latency`]: HDR histograms. [`procstat`]: server CPU, RSS, disk and network from /proc.
//! - [`quiet`]: other work on the machine during a run (waited out, runs it disturbed redone).
//! - [`pin`]: server on one core, load on another. [`peers`]: starting and stopping systems.
//! - [`cell`] and [`runner`]: one measured run. [`scenario`]: the studies' matrices.
//! - [`report`]: JSON, Markdown ratio tables and (feature `plots`) SVG/PNG plots;
//!   [`sittings`]: which machine measured which runs of a run carried across sittings.
#![deny(missing_docs)]

pub mod cell;
pub use fogline_probe::{accounting, clock, latency, payload};
pub mod driver;
pub mod drivers;
pub mod harness;
pub mod interval;
pub mod peers;
pub mod pin;
#[cfg(feature = "plots")]
pub mod plot;
pub mod procstat;
pub mod quiet;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod sittings;
pub mod system;

pub use driver::{Driver, DriverError, Durability, Publisher, Received, Subscriber};
pub use system::System;
