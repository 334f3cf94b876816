//! Compaction of a running journal (see the module above for why it is sound).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::journal::Journal;
use super::{Store, StoreError};

/// How the files of compactions in progress begin (left over by a crash, they are removed
/// on open).
const COMPACT_PREFIX: &str = "state.log.compact.";

/// Removes the files of compactions a crash interrupted.
pub(super) fn remove_leftovers(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with(COMPACT_PREFIX) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

impl Store {
    /// Starts a compaction when the journal has grown enough and none runs: from now on
    /// appends are copied. The caller then snapshots the live state and calls
    /// [`finish_compaction`](Store::finish_compaction). False: nothing to do.
    pub fn begin_compaction(&self) -> bool {
        let mut j = self.journal.lock();
        let due = self
            .compact_min
            .max(j.base.saturating_mul(2))
            .max(j.retry_at);
        if j.copy.is_some() || j.broken() || j.closed || j.len < due {
            return false;
        }
        j.copy = Some(Vec::new());
        true
    }

    /// Its server stopped: no compaction begins or finishes from now on (one that is
    /// renaming its file first completes). Appends still go to the journal.
    pub fn close(&self) {
        let mut j = self.journal.lock();
        j.closed = true;
        j.copy = None;
    }

    /// Drops a compaction begun but not to be finished.
    pub fn abandon_compaction(&self) {
        self.journal.lock().copy = None;
    }

    /// Replaces the journal with `snapshot` (entries framed with [`Entry::frame_into`],
    /// rebuilding the state as it was at some point after
    /// [`begin_compaction`](Store::begin_compaction)) followed by what was appended since
    /// then. Returns the new length. On error the old journal stays in use, whole.
    ///
    /// # Errors
    /// The new file cannot be written or renamed; or too much was appended meanwhile
    /// (the compaction is abandoned and tried again later).
    pub fn finish_compaction(&self, snapshot: &[u8]) -> Result<u64, StoreError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        // A name of its own: a server started in this process after this one stopped
        // compacts the same directory.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let tmp = dir.join(format!(
            "{COMPACT_PREFIX}{}",
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let io = |source| StoreError::Io {
            path: tmp.clone(),
            source,
        };
        let result = (|| {
            // The snapshot is written and synced before taking the lock: appends (and the
            // writers behind them) go on meanwhile; only the copy is synced under it.
            let mut f = File::create(&tmp).map_err(io)?;
            f.write_all(snapshot).map_err(io)?;
            f.sync_data().map_err(io)?;
            let mut j = self.journal.lock();
            let abandoned = |why: &str| StoreError::Io {
                path: self.path.clone(),
                source: std::io::Error::other(format!("compaction abandoned: {why}")),
            };
            if j.closed {
                return Err(abandoned("the server stopped"));
            }
            if j.broken() {
                return Err(StoreError::Broken {
                    path: self.path.clone(),
                });
            }
            let Some(copy) = j.copy.take() else {
                return Err(abandoned("too much was written while it ran"));
            };
            f.write_all(&copy).map_err(io)?;
            f.sync_all().map_err(io)?;
            drop(f);
            std::fs::rename(&tmp, &self.path).map_err(io)?;
            // The rename is done: from here on `state.log` is the new file. Until the
            // directory is synced a crash may bring the old one back; entries acknowledged
            // after a failed sync would be lost with it, so fsync storage stops instead.
            let dir_synced = File::open(dir).and_then(|d| d.sync_all());
            if let Err(e) = dir_synced {
                if self.sync {
                    j.set_broken();
                    return Err(io(e));
                }
            }
            let file = match OpenOptions::new().append(true).open(&self.path) {
                Ok(f) => f,
                Err(e) => {
                    // The old file is unlinked: appending to it would lose entries.
                    j.set_broken();
                    return Err(io(e));
                }
            };
            let len = (snapshot.len() + copy.len()) as u64;
            *j = Journal::new(file, len);
            Ok(len)
        })();
        if result.is_err() {
            let mut j = self.journal.lock();
            j.copy = None;
            j.retry_at = j.len.saturating_add(self.compact_min);
            drop(j);
            let _ = std::fs::remove_file(&tmp);
        }
        result
    }
}
