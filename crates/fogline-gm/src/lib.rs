//! Geometric monitoring (GM): know when a function of readings spread over many nodes crosses a
//! threshold while most nodes stay silent.
//!
//! Source: Stylianopoulos' licentiate thesis, Paper II, sections 3.2-3.5
//! (docs/GEOMETRIC_MONITORING.md reads it with the code), and AutoMon (Sivan, Gabel, Schuster,
//! SIGMOD 2022) for the convex zones and the coordinator's lazy synchronisation.
//!
//! - [`function`]: the monitored functions and the exact side of a sum of local vectors.
//! - [`zone`]: safe zones (ball, box, convex, band).
//! - [`proto`]: the protocols as state machines (a reading or a message in, messages out):
//!   the thesis' coordinator-free broadcast, a coordinator with lazy sync, and the baselines.
//! - [`oracle`]: the exact centralised answer at every epoch.
//! - [`sim`]: N nodes over a network model, with the metrics.
//! - [`data`]: traces in the Intel Lab `data.txt` schema: generators and a loader.
//! - [`experiment`]: the Table 3.2 and Fig. 3.5 reproductions.
//! - [`service`]: the `[gm]` configuration and the monitor a fogline node runs (records in,
//!   records out).
//!
//! No networking, no clock, no threads: every result is a function of the inputs and a seed.
#![deny(missing_docs)]

pub mod data;
pub mod experiment;

pub mod function;
pub mod linalg;
pub mod oracle;
pub mod proto;
pub mod rng;
pub mod service;
pub mod sim;
pub mod zone;

pub use function::{Function, Kind, Side};
pub use zone::Zone;
