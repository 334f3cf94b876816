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
//! A function is one of two kinds:
//! - **wasm**: a WebAssembly module run in-process by the `wasmi` interpreter, memory and
//!   fuel bounded per record. A trap fails that record only.
//! - **process**: a command fed one record per stdin line, each stdout line a result.
//!   A payload containing `\n` or longer than `max_line_bytes` is refused (a failure), not
//!   escaped. At most `queue` records wait for stdin; when full, the instance stops
//!   reading its subscription and the broker's slow-consumer policy applies. stderr is
//!   logged, at most 100 lines of 1 KiB per child. A child that exits is restarted after
//!   1 s, 2 s, 4 s ... 30 s; after `max_restarts` restarts in a row (a child that lived
//!   [`STABLE_AFTER_SECS`] resets the count) the instance is failed. Stop kills the child
//!   with SIGKILL and reaps it.
//!
//! # The wasm ABI
//!
//! The module imports nothing and exports:
//! - `memory`: its linear memory;
//! - `alloc(len: i32) -> i32`: room for an input of `len` bytes; returns its address;
//! - `process(ptr: i32, len: i32) -> i64`: handles the record the host wrote at `ptr`
//!   and returns `(out_ptr << 32) | out_len`, the result's place in memory; `out_len` 0
//!   means no result for this record (a filter).
//!
//! For each record the host sets the fuel to `fuel_per_record`, calls `alloc`, writes the
//! payload at the address returned, calls `process` and copies the result out before the
//! next call, so the module may reuse one buffer for every record. The result is
//! published with the input record's headers. A trap, running out of fuel, growing memory
//! past `memory_bytes` or returning a range outside memory counts one failure; the
//! instance is then replaced by a fresh one (its memory reset) and goes on with the next
//! record.
//!
//! An example, upper-casing ASCII text in place (it is `tests/wasm/upper.wat`):
//!
//! ```text
//! (module
//!   (memory (export "memory") 1)
//!   ;; One buffer at 1024, grown to fit each record.
//!   (func (export "alloc") (param $len i32) (result i32)
//!     (local $pages i32)
//!     (local.set $pages
//!       (i32.sub
//!         (i32.shr_u (i32.add (local.get $len) (i32.const 66559)) (i32.const 16))
//!         (memory.size)))
//!     (if (i32.gt_s (local.get $pages) (i32.const 0))
//!       (then (drop (memory.grow (local.get $pages)))))
//!     (i32.const 1024))
//!   (func (export "process") (param $ptr i32) (param $len i32) (result i64)
//!     (local $i i32) (local $c i32) (local $at i32)
//!     (block $done
//!       (loop $next
//!         (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
//!         (local.set $at (i32.add (local.get $ptr) (local.get $i)))
//!         (local.set $c (i32.load8_u (local.get $at)))
//!         (if (i32.lt_u (i32.sub (local.get $c) (i32.const 97)) (i32.const 26))
//!           (then (i32.store8 (local.get $at) (i32.sub (local.get $c) (i32.const 32)))))
//!         (local.set $i (i32.add (local.get $i) (i32.const 1)))
//!         (br $next)))
//!     (i64.or
//!       (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32))
//!       (i64.extend_i32_u (local.get $len)))))
//! ```
//!
//! Compile it with any WAT assembler (`wat2wasm upper.wat`, or the `wat` crate), store
//! it with [`FunctionSpec::wasm`] and start it:
//!
//! ```no_run
//! # use fogline_functions::FunctionError;
//! # async fn example(broker: fogline_broker::Broker, module: Vec<u8>) -> Result<(), FunctionError> {
//! use fogline_functions::{FunctionSpec, FunctionStore, Runner};
//!
//! let store = FunctionStore::open("/var/lib/fogline/functions")?;
//! store.store(&FunctionSpec::wasm("upper", module).with_attr("stage", "clean"))?;
//! let (_stop_tx, stop) = tokio::sync::watch::channel(false);
//! let runner = Runner::new(broker, store, stop);
//! let id = runner.start("upper", "site/+/text", "site/clean/text").await?;
//! runner.stop(id).await?;
//! # Ok(()) }
//! ```
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
