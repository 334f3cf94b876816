//! The catalog: which streams a node has and their settings, kept across restarts.
//!
//! File `<data_dir>/node/streams.json`, written whole (a temporary file, fsynced, renamed
//! over the old one, then the directory fsynced), so a crash leaves the old catalog or the
//! new one and a change that returned survives `kill -9` and power loss. Not kept when the
//! broker's default storage is `memory` (such a node writes no files): there, runtime changes
//! last until the process ends.
//!
//! ```json
//! {"version": 1,
//!  "streams": [{"name": "default", "subjects": ["#"], "storage": null,
//!               "retention_bytes": null, "retention_age_ms": null, "segment_bytes": null}],
//!  "declared": {"default": {...the same fields...}}}
//! ```
//!
//! `null` takes the broker's default, a retention of 0 means none. `declared` remembers what
//! the configuration file said of each stream it names when that was last applied, so that
//! a restart tells a file edited since (its settings win, being newer) from one unchanged
//! (the catalog wins: changes made at runtime persist, and a stream deleted at runtime stays
//! deleted). See [`reconcile`].

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

use crate::config::{StorageMode, StreamConfig};
use crate::error::BrokerError;

/// The version this code writes and reads.
const VERSION: u32 = 1;

/// One stream's settings as the catalog stores them (exact integers, not display strings).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    name: String,
    subjects: Vec<String>,
    storage: Option<StorageMode>,
    retention_bytes: Option<u64>,
    retention_age_ms: Option<u64>,
    segment_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sql: Option<String>,
}

impl From<&StreamConfig> for Spec {
    fn from(c: &StreamConfig) -> Spec {
        Spec {
            name: c.name.clone(),
            subjects: c.subjects.clone(),
            storage: c.storage,
            retention_bytes: c.retention_bytes.map(|b| b.as_u64()),
            retention_age_ms: c
                .retention_age
                .map(|a| u64::try_from(a.as_millis()).unwrap_or(u64::MAX)),
            segment_bytes: c.segment_bytes.map(|b| b.as_u64()),
            sql: c.sql.clone(),
        }
    }
}

impl From<&Spec> for StreamConfig {
    fn from(s: &Spec) -> StreamConfig {
        StreamConfig {
            name: s.name.clone(),
            subjects: s.subjects.clone(),
            storage: s.storage,
            retention_bytes: s.retention_bytes.map(ByteSize::b),
            retention_age: s.retention_age_ms.map(Duration::from_millis),
            segment_bytes: s.segment_bytes.map(ByteSize::b),
            sql: s.sql.clone(),
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    streams: Vec<Spec>,
    #[serde(default)]
    declared: BTreeMap<String, Spec>,
}

/// The streams of a node and what the configuration file last declared.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    /// Where it is kept; `None` for a node that writes no files.
    path: Option<PathBuf>,
    streams: Vec<StreamConfig>,
    declared: BTreeMap<String, StreamConfig>,
}

impl Catalog {
    /// The catalog's file in `data_dir`.
    pub fn path_in(data_dir: &Path) -> PathBuf {
        data_dir.join("node").join("streams.json")
    }

    /// Reads the catalog at `path` (`None`: none kept). `Ok(None)` when there is no file yet.
    ///
    /// # Errors
    /// The file exists but cannot be read or parsed: the node does not start, rather than
    /// forget streams (the message names the file).
    pub fn load(path: Option<PathBuf>) -> Result<Option<Catalog>, BrokerError> {
        let Some(p) = path else {
            return Ok(None);
        };
        let text = match std::fs::read_to_string(&p) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(BrokerError::io(format!("reading {}", p.display()), e)),
        };
        let file: File = serde_json::from_str(&text).map_err(|e| {
            BrokerError::Config(format!(
                "{}: {e} (the node's stream catalog; restore it from a backup, or move it \
                 away to start from the configuration file's streams)",
                p.display()
            ))
        })?;
        if file.version != VERSION {
            return Err(BrokerError::Config(format!(
                "{}: catalog version {} is not {VERSION}, which this build reads",
                p.display(),
                file.version
            )));
        }
        Ok(Some(Catalog {
            path: Some(p),
            streams: file.streams.iter().map(StreamConfig::from).collect(),
            declared: file
                .declared
                .iter()
                .map(|(k, v)| (k.clone(), StreamConfig::from(v)))
                .collect(),
        }))
    }

    /// The streams, in creation order.
    pub fn streams(&self) -> &[StreamConfig] {
        &self.streams
    }

    /// Adds or replaces a stream's settings (in place when it exists).
    pub fn put(&mut self, cfg: StreamConfig) {
        match self.streams.iter_mut().find(|s| s.name == cfg.name) {
            Some(s) => *s = cfg,
            None => self.streams.push(cfg),
        }
    }

    /// Forgets a stream (what the configuration file declared of it is kept, so a restart
    /// with the same file does not bring it back).
    pub fn remove(&mut self, name: &str) {
        self.streams.retain(|s| s.name != name);
    }

    /// Writes the catalog, if the node keeps one. Blocks on the disk.
    ///
    /// # Errors
    /// [`BrokerError::Io`] naming the file; the file is then as it was.
    pub fn save(&self) -> Result<(), BrokerError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let file = File {
            version: VERSION,
            streams: self.streams.iter().map(Spec::from).collect(),
            declared: self
                .declared
                .iter()
                .map(|(k, v)| (k.clone(), Spec::from(v)))
                .collect(),
        };
        let text = serde_json::to_vec_pretty(&file).map_err(std::io::Error::other);
        let err = |what: &str, e: std::io::Error| {
            BrokerError::io(format!("{what} {}", path.display()), e)
        };
        let text = text.map_err(|e| err("encoding", e))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| err("creating the directory of", e))?;
        let tmp = path.with_extension("json.tmp");
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&text)?;
            f.write_all(b"\n")?;
            f.sync_all()
        };
        write().map_err(|e| err("writing", e))?;
        std::fs::rename(&tmp, path).map_err(|e| err("replacing", e))?;
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| err("syncing the directory of", e))
    }
}

/// The streams a node opens: the catalog's, with the configuration file's `declared`
/// streams applied where the file changed since it was last applied. Returns the catalog to
/// keep and whether it differs from the one on disk.
///
/// - No catalog yet (a new node, or one from before catalogs): the file's streams, or
///   `seed` when the file names none (the node's `default` stream; not recorded as
///   declared by the file).
/// - A stream the file names with settings other than it named last time (or names for the
///   first time): the file's settings replace the catalog's (or the stream is created).
/// - A stream the file names as it did last time: the catalog's settings stand, so changes
///   made at runtime persist, and a stream deleted at runtime is not recreated.
/// - A stream the file no longer names: kept (its data is not deleted by an edit).
pub(crate) fn reconcile(
    stored: Option<Catalog>,
    path: Option<PathBuf>,
    declared: &[StreamConfig],
    seed: &[StreamConfig],
) -> (Catalog, bool) {
    let Some(mut cat) = stored else {
        let streams = if declared.is_empty() { seed } else { declared };
        let cat = Catalog {
            path,
            streams: streams.to_vec(),
            declared: declared
                .iter()
                .map(|d| (d.name.clone(), d.clone()))
                .collect(),
        };
        return (cat, true);
    };
    let mut changed = false;
    for d in declared {
        if cat.declared.get(&d.name) != Some(d) {
            tracing::info!(stream = %d.name, "applying the configuration file's settings of the stream (new or changed since last applied)");
            cat.put(d.clone());
            cat.declared.insert(d.name.clone(), d.clone());
            changed = true;
        }
    }
    let before = cat.declared.len();
    cat.declared
        .retain(|name, _| declared.iter().any(|d| &d.name == name));
    changed |= cat.declared.len() != before;
    (cat, changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(name: &str, subject: &str) -> StreamConfig {
        StreamConfig::new(name, vec![subject.to_string()])
    }

    #[test]
    fn a_new_node_takes_the_file_and_runtime_changes_persist() {
        let dir = tempfile::tempdir().unwrap();
        let path = Catalog::path_in(dir.path());
        let file = vec![stream("a", "a/#"), stream("b", "b/#")];
        let (mut cat, changed) = reconcile(None, Some(path.clone()), &file, &[]);
        assert!(changed);
        cat.save().unwrap();
        // At runtime: a changed, b deleted, c created.
        let mut a2 = stream("a", "a2/#");
        a2.retention_bytes = Some(ByteSize::b(0));
        a2.retention_age = Some(Duration::from_millis(1500));
        cat.put(a2.clone());
        cat.remove("b");
        cat.put(stream("c", "c/#"));
        cat.save().unwrap();
        // A restart with the same file keeps all of it.
        let loaded = Catalog::load(Some(path.clone())).unwrap().unwrap();
        let (cat, changed) = reconcile(Some(loaded), Some(path.clone()), &file, &[]);
        assert!(!changed);
        assert_eq!(cat.streams(), &[a2.clone(), stream("c", "c/#")]);
        // An edit of the file wins for the stream it edits.
        let edited = vec![stream("a", "a3/#"), stream("b", "b/#")];
        let (cat, changed) = reconcile(Some(cat), Some(path.clone()), &edited, &[]);
        assert!(changed);
        assert_eq!(cat.streams()[0], stream("a", "a3/#"));
        assert_eq!(
            cat.streams().len(),
            2,
            "b stays deleted: the file did not change it"
        );
        // A stream the file stops naming is kept.
        let (cat, changed) = reconcile(Some(cat), Some(path.clone()), &[], &[]);
        assert!(changed);
        assert_eq!(cat.streams().len(), 2);
        // A seed (the node's default stream) is taken only by a new node, and not as the
        // file's: a restart with the same (empty) file changes nothing.
        let seed = [stream("default", "#")];
        let (cat, changed) = reconcile(None, Some(path.clone()), &[], &seed);
        assert!(changed);
        assert_eq!(cat.streams(), &seed);
        let (_, changed) = reconcile(Some(cat), Some(path), &[], &seed);
        assert!(!changed);
    }

    #[test]
    fn a_damaged_catalog_is_refused_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = Catalog::path_in(dir.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{\"version\": 1, \"streams\": [").unwrap();
        let err = Catalog::load(Some(path.clone())).unwrap_err().to_string();
        assert!(err.contains("streams.json"), "{err}");
        assert!(Catalog::load(Some(dir.path().join("none.json")))
            .unwrap()
            .is_none());
        assert!(Catalog::load(None).unwrap().is_none());
    }
}
