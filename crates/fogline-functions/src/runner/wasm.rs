//! WebAssembly functions, run by the `wasmi` interpreter with the ABI in the crate docs.
//!
//! Each record gets `fuel_per_record` fuel for its `alloc` and `process` calls; memory can
//! grow to `memory_bytes`, and a denied growth traps rather than returning -1, so a module
//! that ignores `memory.grow`'s result still fails cleanly. A trap (including running out
//! of fuel) fails that record and replaces the instance with a fresh one, so the state a
//! trap left half-updated never reaches the next record. Records are run on Tokio's
//! blocking pool, one publish batch at a time, so a slow module never holds a runtime
//! worker.

use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;
use fogline_broker::link::LinkSubscription;
use wasmi::{Config, Engine, Instance, Linker, Memory, Module, Store, StoreLimits, TypedFunc};
use wasmi::{StoreLimitsBuilder, TrapCode};

use super::{Ctx, InstanceState};
use crate::error::FunctionError;
use crate::spec::WasmSpec;

/// The engine every wasm instance of a runner shares: fuel metering on.
pub(crate) fn engine() -> Engine {
    let mut config = Config::default();
    config.consume_fuel(true);
    Engine::new(&config)
}

/// One record's outcome: a result, none, or why it failed.
type Outcome = Result<Option<Vec<u8>>, String>;

/// One compiled module and its live instance.
pub(crate) struct WasmFunction {
    name: String,
    module: Module,
    memory_bytes: usize,
    fuel: u64,
    live: Live,
}

/// An instance and its ABI exports.
struct Live {
    store: Store<StoreLimits>,
    memory: Memory,
    alloc: TypedFunc<i32, i32>,
    process: TypedFunc<(i32, i32), i64>,
}

impl WasmFunction {
    /// Compiles and instantiates `spec`'s module.
    pub(crate) fn new(
        engine: &Engine,
        name: &str,
        spec: &WasmSpec,
    ) -> Result<WasmFunction, FunctionError> {
        let err = |reason: String| FunctionError::Wasm {
            name: name.to_string(),
            reason,
        };
        let module = Module::new(engine, &spec.module).map_err(|e| err(e.to_string()))?;
        let memory_bytes = usize::try_from(spec.memory_bytes).unwrap_or(usize::MAX);
        let live = instantiate(&module, memory_bytes, spec.fuel_per_record).map_err(err)?;
        Ok(WasmFunction {
            name: name.to_string(),
            module,
            memory_bytes,
            fuel: spec.fuel_per_record,
            live,
        })
    }

    /// Runs one record: `Ok(None)` when the module produced no output.
    ///
    /// # Errors
    /// A trap, fuel exhausted, memory refused, or an output outside memory; the instance
    /// is replaced by a fresh one before returning.
    pub(crate) fn call(&mut self, input: &[u8]) -> Outcome {
        let result = self.try_call(input);
        if let Err(why) = &result {
            match instantiate(&self.module, self.memory_bytes, self.fuel) {
                Ok(live) => self.live = live,
                Err(e) => return Err(format!("{why}; and reinstantiating: {e}")),
            }
        }
        result
    }

    fn try_call(&mut self, input: &[u8]) -> Outcome {
        let live = &mut self.live;
        let len = i32::try_from(input.len())
            .ok()
            .filter(|l| (*l as usize) <= self.memory_bytes)
            .ok_or_else(|| format!("record of {} bytes > memory_bytes", input.len()))?;
        live.store.set_fuel(self.fuel).map_err(|e| e.to_string())?;
        let ptr = live
            .alloc
            .call(&mut live.store, len)
            .map_err(|e| trap("alloc", &e))?;
        live.memory
            .write(&mut live.store, ptr as u32 as usize, input)
            .map_err(|_| format!("alloc returned {ptr}, outside memory for {len} bytes"))?;
        let packed = live
            .process
            .call(&mut live.store, (ptr, len))
            .map_err(|e| trap("process", &e))? as u64;
        let (out_ptr, out_len) = ((packed >> 32) as usize, (packed & 0xffff_ffff) as usize);
        if out_len == 0 {
            return Ok(None);
        }
        let mut out = vec![0; out_len];
        live.memory
            .read(&live.store, out_ptr, &mut out)
            .map_err(|_| format!("output at {out_ptr} of {out_len} bytes is outside memory"))?;
        Ok(Some(out))
    }
}

fn trap(call: &str, e: &wasmi::Error) -> String {
    match e.as_trap_code() {
        Some(TrapCode::OutOfFuel) => format!("{call}: out of fuel"),
        Some(TrapCode::GrowthOperationLimited) => format!("{call}: memory limit reached"),
        _ => format!("{call}: {e}"),
    }
}

fn instantiate(module: &Module, memory_bytes: usize, fuel: u64) -> Result<Live, String> {
    let limits = StoreLimitsBuilder::new()
        .memory_size(memory_bytes)
        .memories(1)
        .instances(1)
        .tables(1)
        .table_elements(64 << 10)
        .trap_on_grow_failure(true)
        .build();
    let mut store = Store::new(module.engine(), limits);
    store.limiter(|limits| limits);
    // A start function runs on this fuel too.
    store.set_fuel(fuel).map_err(|e| e.to_string())?;
    let instance: Instance = Linker::new(module.engine())
        .instantiate_and_start(&mut store, module)
        .map_err(|e| e.to_string())?;
    let memory = instance
        .get_memory(&store, "memory")
        .ok_or("no exported memory named \"memory\"")?;
    let alloc = instance
        .get_typed_func::<i32, i32>(&store, "alloc")
        .map_err(|e| format!("export alloc(i32) -> i32: {e}"))?;
    let process = instance
        .get_typed_func::<(i32, i32), i64>(&store, "process")
        .map_err(|e| format!("export process(i32, i32) -> i64: {e}"))?;
    Ok(Live {
        store,
        memory,
        alloc,
        process,
    })
}

/// Runs the instance until it is stopped or its source ends. Each result carries the
/// headers of the record it came from.
pub(crate) async fn run(
    mut ctx: Ctx,
    mut f: WasmFunction,
    mut sub: LinkSubscription,
) -> InstanceState {
    loop {
        let batch = tokio::select! {
            _ = ctx.stopped() => return InstanceState::Stopped,
            b = sub.recv_batch() => b,
        };
        let counters = ctx.out.status.counters();
        counters.dropped.store(sub.dropped(), Relaxed);
        let Some(batch) = batch else {
            let why = sub.closed().map(|r| format!(": {r:?}")).unwrap_or_default();
            return InstanceState::Failed {
                reason: format!("the source subscription ended{why}"),
            };
        };
        let records = batch.records.clone();
        counters
            .records_in
            .fetch_add(u64::from(batch.count()), Relaxed);
        let ran = tokio::task::spawn_blocking(move || {
            let results: Vec<(Bytes, Outcome)> = records
                .iter()
                .map(|r| (r.headers.clone(), f.call(&r.payload)))
                .collect();
            (f, results)
        })
        .await;
        let results;
        (f, results) = match ran {
            Ok(done) => done,
            Err(e) => {
                return InstanceState::Failed {
                    reason: format!("the interpreter panicked: {e}"),
                }
            }
        };
        for (headers, result) in results {
            match result {
                Ok(Some(out)) => ctx.out.publish(&headers, &out).await,
                Ok(None) => {}
                Err(why) => ctx.out.status.fail_record(&f.name, why),
            }
        }
    }
}
