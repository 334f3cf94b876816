//! The function store: R-Pulsar's `store_function` and `delete`, kept in one directory.
//!
//! # On disk
//! - `<name>.json`: `{"spec": FunctionSpec, "module": {"file", "len", "crc32"}}`, the module
//!   part only for wasm functions.
//! - `<name>.<crc32 hex>.wasm`: the module's bytes.
//! - `*.tmp`: a write in progress.
//!
//! # Invariants
//! - Every file is written whole to `*.tmp`, synced, renamed into place, and the directory
//!   synced: a crash leaves either the old file or the new one, plus perhaps a torn `*.tmp`.
//! - The JSON is the commit point: the module it names is written first, so a function
//!   exists exactly when its JSON does. Replacing a module writes a file with a new name,
//!   so the old JSON never points at a half-replaced module.
//! - At open, `*.tmp` files and modules no JSON names are removed; a JSON that does not
//!   parse is reported and left alone (with its modules) for the operator.
//! - A module is checked against its length and CRC-32 each time it is read.
//!
//! # Delete while running
//! An instance holds a lease on its function while it runs. [`FunctionStore::delete`]
//! refuses a leased function unless forced; a forced delete stops every instance of it,
//! then removes the files. A replaced function does not touch running instances: they
//! keep the version they started with.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::error::FunctionError;
use crate::spec::{validate_name, FunctionKind, FunctionSpec};

/// A directory of stored functions. Cheap to clone; clones share the directory and leases.
///
/// Its methods do blocking file I/O (small files, a few fsyncs): they are for the control
/// plane, not the data path.
#[derive(Clone)]
pub struct FunctionStore {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    index: BTreeMap<String, Stored>,
    /// Per function, the stop signal of each running instance, by lease id.
    leases: HashMap<String, BTreeMap<u64, Arc<watch::Sender<bool>>>>,
    next_lease: u64,
}

/// The JSON file's content.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    spec: FunctionSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    module: Option<ModuleFile>,
}

#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModuleFile {
    file: String,
    len: u64,
    crc32: u32,
}

/// A stored function as listed: its spec without the module bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionSummary {
    /// The spec; a wasm spec's `module` is left empty here (see [`FunctionStore::get`]).
    pub spec: FunctionSpec,
    /// The module's size, for a wasm function.
    pub module_bytes: Option<u64>,
    /// Instances running it.
    pub running: usize,
}

/// A running instance's hold on its function; dropping it releases the hold.
pub(crate) struct Lease {
    store: FunctionStore,
    name: String,
    id: u64,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut state = self.store.inner.state.lock();
        if let Some(leases) = state.leases.get_mut(&self.name) {
            leases.remove(&self.id);
            if leases.is_empty() {
                state.leases.remove(&self.name);
            }
        }
    }
}

impl FunctionStore {
    /// Opens (creating) the store in `dir`, clearing torn writes and orphaned modules.
    ///
    /// # Errors
    /// The directory cannot be created or read.
    pub fn open(dir: impl Into<PathBuf>) -> Result<FunctionStore, FunctionError> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|e| FunctionError::io(&dir, e))?;
        let mut files = Vec::new();
        for entry in fs::read_dir(&dir).map_err(|e| FunctionError::io(&dir, e))? {
            let entry = entry.map_err(|e| FunctionError::io(&dir, e))?;
            if let Ok(name) = entry.file_name().into_string() {
                files.push(name);
            }
        }
        let mut index = BTreeMap::new();
        let mut unreadable = Vec::new();
        for file in &files {
            let Some(name) = file.strip_suffix(".json") else {
                continue;
            };
            match read_json(&dir.join(file)) {
                Ok(stored) if stored.spec.name == name => {
                    index.insert(name.to_string(), stored);
                }
                Ok(_) => {
                    let why = "function store: the JSON names another function; skipped";
                    tracing::error!(file = %file, "{why}");
                    unreadable.push(name);
                }
                Err(e) => {
                    tracing::error!(error = %e, "function store: skipped");
                    unreadable.push(name);
                }
            }
        }
        for file in &files {
            let torn = file.ends_with(".tmp");
            let orphan = file.ends_with(".wasm") && {
                let owner = file.split('.').next().unwrap_or_default();
                let named = index
                    .get(owner)
                    .and_then(|s| s.module.as_ref())
                    .is_some_and(|m| &m.file == file);
                !named && !unreadable.contains(&owner)
            };
            if torn || orphan {
                let path = dir.join(file);
                fs::remove_file(&path).map_err(|e| FunctionError::io(&path, e))?;
            }
        }
        Ok(FunctionStore {
            inner: Arc::new(Inner {
                dir,
                state: Mutex::new(State {
                    index,
                    ..State::default()
                }),
            }),
        })
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Stores `spec` (R-Pulsar's `store_function`), replacing a function of that name.
    ///
    /// # Errors
    /// An invalid spec; a failed write (the previous version, if any, is still stored).
    pub fn store(&self, spec: &FunctionSpec) -> Result<(), FunctionError> {
        spec.validate()?;
        let dir = &self.inner.dir;
        let mut state = self.inner.state.lock();
        let mut kept = spec.clone();
        let module = match &mut kept.kind {
            FunctionKind::Wasm(w) => {
                let bytes = std::mem::take(&mut w.module);
                let crc32 = crc32fast::hash(&bytes);
                let file = format!("{}.{crc32:08x}.wasm", spec.name);
                write_atomic(dir, &file, &bytes)?;
                Some(ModuleFile {
                    file,
                    len: bytes.len() as u64,
                    crc32,
                })
            }
            FunctionKind::Process(_) => None,
        };
        let stored = Stored { spec: kept, module };
        let json = serde_json::to_vec_pretty(&stored).map_err(|e| FunctionError::Corrupt {
            path: dir.join(format!("{}.json", spec.name)),
            reason: e.to_string(),
        })?;
        write_atomic(dir, &format!("{}.json", spec.name), &json)?;
        let old = state.index.insert(spec.name.clone(), stored);
        let new_file = state.index[&spec.name].module.as_ref().map(|m| &m.file);
        if let Some(old) = old.and_then(|s| s.module) {
            if Some(&old.file) != new_file {
                remove_quietly(&dir.join(&old.file));
            }
        }
        Ok(())
    }

    /// The stored function `name`, with its module.
    ///
    /// # Errors
    /// Not found, or its module cannot be read or fails its checksum.
    pub fn get(&self, name: &str) -> Result<FunctionSpec, FunctionError> {
        let stored = self.inner.state.lock().index.get(name).cloned();
        let stored = stored.ok_or_else(|| FunctionError::NotFound(name.to_string()))?;
        self.load(stored)
    }

    /// Every stored function, by name, with how many instances run it.
    pub fn list(&self) -> Vec<FunctionSummary> {
        let state = self.inner.state.lock();
        state
            .index
            .values()
            .map(|s| FunctionSummary {
                spec: s.spec.clone(),
                module_bytes: s.module.as_ref().map(|m| m.len),
                running: state.leases.get(&s.spec.name).map_or(0, BTreeMap::len),
            })
            .collect()
    }

    /// Names of the functions whose profile matches `wanted` (R-Pulsar's function profile
    /// matching, for `start_function`): every attribute of `wanted` must be in the
    /// function's profile, with an equal value; a value ending in `*` matches by prefix
    /// (`Li*`) and an empty value matches any. Ranges and locations are not matched here.
    pub fn find(&self, wanted: &BTreeMap<String, String>) -> Vec<String> {
        let state = self.inner.state.lock();
        let matches = |profile: &BTreeMap<String, String>| {
            wanted.iter().all(|(attr, want)| {
                profile
                    .get(attr)
                    .is_some_and(|have| match want.strip_suffix('*') {
                        Some(prefix) => have.starts_with(prefix),
                        None => want.is_empty() || have == want,
                    })
            })
        };
        let found = state.index.values().filter(|s| matches(&s.spec.profile));
        found.map(|s| s.spec.name.clone()).collect()
    }

    /// Instances running `name`.
    pub fn running(&self, name: &str) -> usize {
        let state = self.inner.state.lock();
        state.leases.get(name).map_or(0, BTreeMap::len)
    }

    /// Deletes `name` (R-Pulsar's `delete`). While instances run it, the delete is refused
    /// unless `force`; forced, it signals each of them to stop first (they end as
    /// `stopped`).
    ///
    /// # Errors
    /// Not found; running and not forced; the files cannot be removed.
    pub fn delete(&self, name: &str, force: bool) -> Result<(), FunctionError> {
        validate_name(name)?;
        let mut state = self.inner.state.lock();
        if !state.index.contains_key(name) {
            return Err(FunctionError::NotFound(name.to_string()));
        }
        if let Some(leases) = state.leases.get(name) {
            if !force {
                return Err(FunctionError::Running {
                    name: name.to_string(),
                    instances: leases.len(),
                });
            }
            for stop in leases.values() {
                stop.send_replace(true);
            }
        }
        let dir = &self.inner.dir;
        let json = dir.join(format!("{name}.json"));
        fs::remove_file(&json).map_err(|e| FunctionError::io(&json, e))?;
        sync_dir(dir)?;
        if let Some(m) = state.index.remove(name).and_then(|s| s.module) {
            // An orphan left by a crash here is removed at the next open.
            remove_quietly(&dir.join(m.file));
        }
        Ok(())
    }

    /// Reads `name` with its module and registers a running instance's stop signal,
    /// atomically with respect to [`FunctionStore::delete`].
    pub(crate) fn lease(
        &self,
        name: &str,
        stop: Arc<watch::Sender<bool>>,
    ) -> Result<(FunctionSpec, Lease), FunctionError> {
        let mut state = self.inner.state.lock();
        let stored = state.index.get(name).cloned();
        let stored = stored.ok_or_else(|| FunctionError::NotFound(name.to_string()))?;
        let spec = self.load(stored)?;
        let id = state.next_lease;
        state.next_lease += 1;
        state
            .leases
            .entry(name.to_string())
            .or_default()
            .insert(id, stop);
        let lease = Lease {
            store: self.clone(),
            name: name.to_string(),
            id,
        };
        Ok((spec, lease))
    }

    fn load(&self, stored: Stored) -> Result<FunctionSpec, FunctionError> {
        let mut spec = stored.spec;
        if let (FunctionKind::Wasm(w), Some(m)) = (&mut spec.kind, &stored.module) {
            let path = self.inner.dir.join(&m.file);
            let bytes = fs::read(&path).map_err(|e| FunctionError::io(&path, e))?;
            if bytes.len() as u64 != m.len || crc32fast::hash(&bytes) != m.crc32 {
                let reason = "module does not match its length and CRC-32".to_string();
                return Err(FunctionError::Corrupt { path, reason });
            }
            w.module = bytes;
        }
        Ok(spec)
    }
}

fn read_json(path: &Path) -> Result<Stored, FunctionError> {
    let bytes = fs::read(path).map_err(|e| FunctionError::io(path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| FunctionError::Corrupt {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

fn write_atomic(dir: &Path, file: &str, bytes: &[u8]) -> Result<(), FunctionError> {
    let tmp = dir.join(format!("{file}.tmp"));
    let mut f = File::create(&tmp).map_err(|e| FunctionError::io(&tmp, e))?;
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .map_err(|e| FunctionError::io(&tmp, e))?;
    drop(f);
    let path = dir.join(file);
    fs::rename(&tmp, &path).map_err(|e| FunctionError::io(&path, e))?;
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), FunctionError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| FunctionError::io(dir, e))
}

/// Removes a file no JSON names any more; a failure only leaves an orphan for the next open.
fn remove_quietly(path: &Path) {
    if let Err(e) = fs::remove_file(path) {
        tracing::warn!(path = %path.display(), error = %e, "function store: module left behind");
    }
}
