//! eKuiper's SQL dialect for fogline's rules: `CREATE STREAM` source definitions and
//! `SELECT` rules with windows, parsed, planned and run over records. No networking and no
//! threads: the rules component of the node feeds it records and timers and sends what it
//! emits.
//!
//! - `value`: [`Value`] and [`Row`], to and from JSON. `error`: [`SqlError`].
//! - `ast`: the syntax tree; `parse`: text to tree ([`parse()`] for a statement,
//!   [`parse_expr`] for an expression), over `lex`, the tokens.
//! - `func`: scalar functions, by name (`FUNCTIONS.md` lists eKuiper's and which are here);
//!   `agg`: aggregates; `analytic`: eKuiper's analytic functions; `state`: per-partition
//!   state of those and of fogline's detectors and pattern sets.
//! - `compile`: tree to compiled expressions (names resolved once); `eval` and `ops`: those
//!   over a row.
//! - `window`: the window kinds; `decode`: payloads to rows by a stream's format and schema;
//!   `snap`: window state to JSON and back.
//! - `plan`: a `SELECT` compiled against its stream, run record by record and tick by tick
//!   ([`Plan`]); `project`: its stages after the window.
#![deny(missing_docs)]

mod agg;
mod analytic;
pub mod ast;
mod compile;
mod decode;
pub mod error;
mod eval;
pub mod func;
mod lex;
mod ops;
pub mod parse;
pub mod plan;
mod project;
mod sample;
mod snap;
mod state;
pub mod value;
mod window;

pub use error::SqlError;
pub use parse::{parse, parse_expr};
pub use plan::{Emit, Extensions, Meta, OperatorStats, Plan, PlanOptions};
pub use value::{Row, Value};
