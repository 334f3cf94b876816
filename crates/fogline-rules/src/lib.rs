//! fogline's rules component: eKuiper-dialect SQL rules with windows over the node's
//! streams, IF-THEN triggers on their results, and actions, all on the in-process link and
//! managed over REST in eKuiper's shapes (`/api/v1/rules`, `/api/v1/patterns`).
//!
//! - `spec`: a rule as written (eKuiper's JSON). `engine`: the node's rules, supervised.
//! - `run`: one rule at work (sources by qos, timers, checkpoints).
//! - `sink`: actions (publish, log, nop, rest). `trigger`: IF-THEN rule sets.
//! - `patterns`: pattern sets for the matcher operators. `store`: files written atomically.
//! - `config`: the `[rules]` section. `api`: the REST routes. `metrics`: the Prometheus collector.
//! - `functions`: functions on demand (`fogline_functions`) for triggers and over REST
//!   (`/api/v1/functions`), with their counters.
//! - `feed`: the rules' fields of the admin API's live feed (the dashboard's rules panel).
#![deny(missing_docs)]

pub mod api;
mod config;
pub mod engine;
pub mod feed;
pub mod functions;
pub mod metrics;
pub mod patterns;
pub mod run;
pub mod sink;
pub mod spec;
pub mod store;
pub mod trigger;

pub use config::{RulesConfig, DEFAULT_SECTION};
pub use engine::{Limits, RuleError, Rules, State, Status};
pub use spec::RuleSpec;

/// What [`Functions`] answers with, later.
pub type FunctionFuture<'a, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<T, String>> + Send + 'a>>;

/// Functions a trigger may start and stop (the node's functions on demand). Async: a
/// trigger's consequence is carried out, and its error counted, before the rule goes on.
pub trait Functions: Send + Sync {
    /// Starts stored function `name` on `source` (a topic filter), publishing to `output`;
    /// returns the instance's id.
    ///
    /// # Errors
    /// No such function, or it cannot start.
    fn start<'a>(
        &'a self,
        name: &'a str,
        source: &'a str,
        output: &'a str,
    ) -> FunctionFuture<'a, String>;

    /// Stops every running instance of `name`, waiting until they have ended.
    ///
    /// # Errors
    /// No such function.
    fn stop<'a>(&'a self, name: &'a str) -> FunctionFuture<'a, ()>;
}
