//! fogline's rules component: eKuiper-dialect SQL rules with windows over the node's
//! streams, IF-THEN triggers on their results, and actions, all on the in-process link and
//! managed over REST in eKuiper's shapes (`/api/v1/rules`, `/api/v1/patterns`).
//!
//! - `spec`: a rule as written (eKuiper's JSON). `engine`: the node's rules, supervised.
//! - `run`: one rule at work (sources by qos, timers, checkpoints).
//! - `sink`: actions (publish, log, nop, rest). `trigger`: IF-THEN rule sets.
//! - `patterns`: pattern sets for the matcher operators. `store`: files written atomically.
//! - `config`: the `[rules]` section. `api`: the REST routes. `metrics`: the Prometheus collector.
//! - `feed`: the rules' fields of the admin API's live feed (the dashboard's rules panel).
#![deny(missing_docs)]

pub mod api;
mod config;
pub mod engine;
pub mod feed;
pub mod metrics;
pub mod patterns;
pub mod run;
pub mod sink;
pub mod spec;
pub mod store;
pub mod trigger;

pub use config::{RulesConfig, DEFAULT_SECTION};
pub use engine::{RuleError, Rules, State, Status};
pub use spec::RuleSpec;

/// Functions a trigger may start and stop (the node's functions component).
pub trait Functions: Send + Sync {
    /// Starts stored function `name` on `source` (a topic filter), publishing to `output`;
    /// returns the instance's id.
    ///
    /// # Errors
    /// No such function, or it cannot start.
    fn start(&self, name: &str, source: &str, output: &str) -> Result<String, String>;

    /// Stops every running instance of `name`.
    ///
    /// # Errors
    /// No such function.
    fn stop(&self, name: &str) -> Result<(), String>;
}
