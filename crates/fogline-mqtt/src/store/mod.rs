//! Durable MQTT state: retained messages and persistent sessions (their
//! subscriptions, queued and inflight QoS 1/2 messages, unreleased incoming
//! QoS 2 packet ids), kept under the broker's `data_dir/mqtt/` when its
//! storage is `mmap` or `fsync`, in memory only otherwise.
//!
//! Format of `state.log`: entries back to back, each
//! `len: u32 LE | crc32(body): u32 LE | body`, body = `kind: u8 | fields`
//! (see [`entry`]). The file is a journal: replaying it in order rebuilds
//! the state. Invariants: an entry is written (`write(2)`, plus `fdatasync`
//! in fsync mode) before the action it records is acknowledged to a client;
//! a torn or corrupt tail is cut at the first bad entry on open; on open the
//! replayed state is written to `state.log.tmp` as a snapshot and renamed
//! over `state.log`, so the journal never grows past one run's changes (a disk without room
//! for the snapshot keeps the journal as it is, its bad tail cut). A failed append is
//! cut off again or stops the journal (see [`journal`]), so no torn entry hides later ones.
//!
//! A running node compacts too: once the journal is past `compact_min` and twice its size
//! after the last compaction, [`Store::begin_compaction`] starts copying what is appended;
//! the caller writes a snapshot of the live state, and [`Store::finish_compaction`] puts
//! the snapshot and that copy in a new file that replaces `state.log` (write, fsync,
//! rename). Replaying the copy over the snapshot gives the state the old journal gives:
//! the copy holds every entry since the snapshot began, and replaying entries the snapshot
//! already reflects ends in the same state (puts overwrite, deletes of what is gone do
//! nothing). Until the rename the old journal gets every append, so a crash during a
//! compaction loses nothing.

mod compact;
pub mod entry;
mod journal;
mod replay;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

pub use entry::Entry;
use journal::{AppendError, Journal};
#[cfg(test)]
pub(crate) use replay::replay;
pub use replay::{Recovered, RecoveredMsg, RecoveredSession};

/// Why the store could not be opened or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An I/O error on the journal.
    #[error("MQTT state in {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// An earlier append failed and could not be undone, so the journal takes no more.
    #[error("MQTT state in {path}: the journal stopped after a failed write; restart the node")]
    Broken {
        /// The file.
        path: PathBuf,
    },
    /// A session's earlier whole write failed moments ago; it is tried again shortly.
    #[error("MQTT state: a session's journal write failed moments ago; not tried again yet")]
    Deferred,
}

/// The journal of durable MQTT state.
pub struct Store {
    journal: Mutex<Journal<File>>,
    path: PathBuf,
    sync: bool,
    /// The journal is compacted once past this and twice its compacted size.
    compact_min: u64,
}

/// The smallest [`Store::set_compact_min`].
pub const MIN_COMPACT: u64 = 4096;

/// Default of [`Store::set_compact_min`].
pub const DEFAULT_COMPACT_MIN: u64 = 64 << 20;

impl Store {
    /// Opens (creating) `dir/state.log`, replays it, compacts it, and returns
    /// the store with what it held.
    ///
    /// # Errors
    /// The directory or file cannot be created, read or written.
    pub fn open(dir: &Path, sync: bool) -> Result<(Store, Recovered), StoreError> {
        let path = dir.join("state.log");
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        compact::remove_leftovers(dir);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io(e)),
        };
        let recovered = replay::replay(&bytes);
        let mut snapshot = Vec::new();
        for e in recovered.snapshot() {
            e.frame_into(&mut snapshot);
        }
        let compacted = write_snapshot(dir, &path, &snapshot);
        if let Err(e) = &compacted {
            // A full disk has no room for a second copy: go on with the journal as it is,
            // its torn tail cut off, rather than refuse to start.
            tracing::warn!(path = %path.display(), error = %e, "cannot compact the MQTT journal at start; appending to it as it is");
            let _ = std::fs::remove_file(dir.join("state.log.tmp"));
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        let mut len = file.metadata().map_err(io)?.len();
        let valid = (bytes.len() - recovered.discarded) as u64;
        if compacted.is_err() && len != valid {
            file.set_len(valid).map_err(io)?;
            file.sync_all().map_err(io)?;
            len = valid;
        }
        let mut journal = Journal::new(file, len);
        if compacted.is_err() {
            // Measured against what a compaction would leave, so the next comes when due;
            // but not before the journal grows by `compact_min`, as after any failed one
            // (the disk that had no room now may have none either).
            journal.base = snapshot.len() as u64;
            journal.retry_at = len.saturating_add(DEFAULT_COMPACT_MIN);
        }
        Ok((
            Store {
                journal: Mutex::new(journal),
                path,
                sync,
                compact_min: DEFAULT_COMPACT_MIN,
            },
            recovered,
        ))
    }

    /// Compacts once the journal is past `bytes` (and twice its compacted size); at least
    /// [`MIN_COMPACT`], so that a small setting cannot start a compaction per append.
    pub fn set_compact_min(&mut self, bytes: u64) {
        self.compact_min = bytes.max(MIN_COMPACT);
        let j = self.journal.get_mut();
        if j.retry_at > 0 {
            j.retry_at = j.len.saturating_add(self.compact_min); // see `open`
        }
    }

    /// Bytes in the journal now.
    pub fn len(&self) -> u64 {
        self.journal.lock().len
    }

    /// True when the journal holds no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends entries as one write.
    ///
    /// # Errors
    /// The write (or sync) failed; the caller must not acknowledge.
    pub fn append(&self, entries: &[Entry<'_>]) -> Result<(), StoreError> {
        let mut buf = Vec::new();
        for e in entries {
            e.frame_into(&mut buf);
        }
        self.append_framed(&buf)
    }

    /// Fails every append from now on, as a journal broken beyond repair does.
    #[cfg(test)]
    pub(crate) fn break_for_test(&self) {
        self.journal.lock().set_broken();
    }

    /// Appends entries already framed with [`Entry::frame_into`], as one write.
    ///
    /// # Errors
    /// The write (or sync) failed; the caller must not acknowledge.
    pub fn append_framed(&self, buf: &[u8]) -> Result<(), StoreError> {
        if buf.is_empty() {
            return Ok(());
        }
        self.journal
            .lock()
            .append(buf, self.sync)
            .map_err(|e| match e {
                AppendError::Io(source) => StoreError::Io {
                    path: self.path.clone(),
                    source,
                },
                AppendError::Broken => StoreError::Broken {
                    path: self.path.clone(),
                },
            })
    }
}

/// Replaces the journal at `path` by `snapshot` (write, fsync, rename, fsync the directory).
fn write_snapshot(dir: &Path, path: &Path, snapshot: &[u8]) -> std::io::Result<()> {
    let tmp = dir.join("state.log.tmp");
    {
        let mut f = File::create(&tmp)?;
        f.write_all(snapshot)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests;
