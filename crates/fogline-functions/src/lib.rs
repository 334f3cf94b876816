//! Functions on demand: R-Pulsar's `store_function`, `start_function`, `stop_function` and
//! `delete` (section IV-D of the R-Pulsar paper) for a fogline node.
//!
//! - [`FunctionStore`] keeps functions ([`FunctionSpec`]: a name, a profile of attributes,
//!   what runs and its limits) in a directory, each written atomically.
//! - [`Runner`] starts a stored function on the records of a topic filter and publishes
//!   its results to an output topic, over the broker's in-process link; it stops instances
//!   on request, on a forced delete of their function, or when the node stops, and keeps
//!   per-instance [`Counters`].
//!
//! Process functions feed a command one record per stdin line and publish each stdout
//! line as a result.
#![deny(missing_docs)]

mod error;
mod runner;
mod spec;
mod store;

pub use error::FunctionError;
pub use runner::{Counters, InstanceId, InstanceInfo, InstanceState, Runner};
pub use spec::{
    validate_name, FunctionKind, FunctionSpec, ProcessSpec, WasmSpec, DEFAULT_FUEL_PER_RECORD,
    DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_RESTARTS, DEFAULT_MEMORY_BYTES, DEFAULT_QUEUE,
    STABLE_AFTER_SECS,
};
pub use store::{FunctionStore, FunctionSummary};
