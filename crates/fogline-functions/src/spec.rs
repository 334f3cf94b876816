//! What a stored function is: a name, a profile, what runs and its limits.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::FunctionError;

/// Default bound on a wasm instance's linear memory: 16 MiB.
pub const DEFAULT_MEMORY_BYTES: u64 = 16 << 20;
/// Default fuel (roughly, wasm instructions) one record may use.
pub const DEFAULT_FUEL_PER_RECORD: u64 = 10_000_000;
/// Default longest line a process may be given or may answer with: 64 KiB.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 << 10;
/// Default records waiting for a process's stdin.
pub const DEFAULT_QUEUE: usize = 1024;
/// Default restarts in a row (each child living under [`STABLE_AFTER_SECS`]) before an
/// instance is failed.
pub const DEFAULT_MAX_RESTARTS: u32 = 5;
/// A child that lived this long resets the backoff and the restarts-in-a-row count.
pub const STABLE_AFTER_SECS: u64 = 30;

/// A function as stored: R-Pulsar's function profile (`store_function`), with what runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FunctionSpec {
    /// `[A-Za-z0-9_-]{1,64}`: also its file name in the store.
    pub name: String,
    /// Attributes describing it (`type=lidar`, `stage=post-processing`), for discovery.
    #[serde(default)]
    pub profile: BTreeMap<String, String>,
    /// What runs.
    pub kind: FunctionKind,
}

/// What runs for each record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum FunctionKind {
    /// A WebAssembly module with the crate's ABI, run in-process by an interpreter.
    Wasm(WasmSpec),
    /// A command fed one record per stdin line, answering with stdout lines.
    Process(ProcessSpec),
}

/// A WebAssembly function and its limits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WasmSpec {
    /// The module (binary format). Kept in its own file beside the JSON, not in it.
    #[serde(skip)]
    pub module: Vec<u8>,
    /// Most bytes its linear memory may grow to; a denied growth traps.
    #[serde(default = "default_memory")]
    pub memory_bytes: u64,
    /// Fuel given to each record's `alloc` + `process` calls.
    #[serde(default = "default_fuel")]
    pub fuel_per_record: u64,
}

/// A process function and its limits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessSpec {
    /// The program (a path, or a name looked up in `PATH`).
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Longest record written to stdin and longest line read from stdout, without the
    /// newline; longer ones count as failures.
    #[serde(default = "default_max_line")]
    pub max_line_bytes: usize,
    /// Records waiting to be written to stdin; when full, the subscription is not read
    /// (the broker's slow-consumer policy then applies).
    #[serde(default = "default_queue")]
    pub queue: usize,
    /// Restarts in a row before the instance is failed.
    #[serde(default = "default_max_restarts")]
    pub max_restarts: u32,
}

fn default_memory() -> u64 {
    DEFAULT_MEMORY_BYTES
}
fn default_fuel() -> u64 {
    DEFAULT_FUEL_PER_RECORD
}
fn default_max_line() -> usize {
    DEFAULT_MAX_LINE_BYTES
}
fn default_queue() -> usize {
    DEFAULT_QUEUE
}
fn default_max_restarts() -> u32 {
    DEFAULT_MAX_RESTARTS
}

impl FunctionSpec {
    /// A wasm function with the default limits and an empty profile.
    pub fn wasm(name: &str, module: impl Into<Vec<u8>>) -> FunctionSpec {
        FunctionSpec {
            name: name.to_string(),
            profile: BTreeMap::new(),
            kind: FunctionKind::Wasm(WasmSpec {
                module: module.into(),
                memory_bytes: DEFAULT_MEMORY_BYTES,
                fuel_per_record: DEFAULT_FUEL_PER_RECORD,
            }),
        }
    }

    /// A process function with the default limits and an empty profile.
    pub fn process<S: Into<String>>(
        name: &str,
        command: &str,
        args: impl IntoIterator<Item = S>,
    ) -> FunctionSpec {
        FunctionSpec {
            name: name.to_string(),
            profile: BTreeMap::new(),
            kind: FunctionKind::Process(ProcessSpec {
                command: command.to_string(),
                args: args.into_iter().map(Into::into).collect(),
                max_line_bytes: DEFAULT_MAX_LINE_BYTES,
                queue: DEFAULT_QUEUE,
                max_restarts: DEFAULT_MAX_RESTARTS,
            }),
        }
    }

    /// Adds a profile attribute.
    pub fn with_attr(mut self, attr: &str, value: &str) -> FunctionSpec {
        self.profile.insert(attr.to_string(), value.to_string());
        self
    }

    /// `wasm` or `process`.
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            FunctionKind::Wasm(_) => "wasm",
            FunctionKind::Process(_) => "process",
        }
    }

    /// Checks the name and that the limits can run anything.
    ///
    /// # Errors
    /// [`FunctionError::InvalidName`] or [`FunctionError::InvalidSpec`].
    pub fn validate(&self) -> Result<(), FunctionError> {
        validate_name(&self.name)?;
        let bad = |reason: &str| Err(FunctionError::spec(&self.name, reason));
        match &self.kind {
            FunctionKind::Wasm(w) if w.module.is_empty() => bad("the wasm module is empty"),
            FunctionKind::Wasm(w) if w.memory_bytes == 0 => bad("memory_bytes is 0"),
            FunctionKind::Wasm(w) if w.fuel_per_record == 0 => bad("fuel_per_record is 0"),
            FunctionKind::Process(p) if p.command.is_empty() => bad("the command is empty"),
            FunctionKind::Process(p) if p.max_line_bytes == 0 => bad("max_line_bytes is 0"),
            FunctionKind::Process(p) if p.queue == 0 => bad("queue is 0"),
            _ => Ok(()),
        }
    }
}

/// Checks a function name: `[A-Za-z0-9_-]{1,64}` (safe as a file name, no dots).
///
/// # Errors
/// [`FunctionError::InvalidName`].
pub fn validate_name(name: &str) -> Result<(), FunctionError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(FunctionError::InvalidName(name.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["a", "lidar_post-proc", &"x".repeat(64)] {
            assert!(validate_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a.b", "../x", "a b", "é", &"x".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn json_has_defaults_and_refuses_unknown_fields() {
        let spec: FunctionSpec =
            serde_json::from_str(r#"{"name":"p","kind":{"type":"process","command":"/bin/cat"}}"#)
                .unwrap();
        assert_eq!(
            spec,
            FunctionSpec::process("p", "/bin/cat", [] as [&str; 0])
        );
        let typo = r#"{"name":"p","kind":{"type":"process","command":"cat","queu":3}}"#;
        assert!(serde_json::from_str::<FunctionSpec>(typo).is_err());
    }
}
