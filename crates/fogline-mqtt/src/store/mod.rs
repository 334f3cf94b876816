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
//! over `state.log`, so the journal never grows past one run's changes.

pub mod entry;
mod replay;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

pub use entry::Entry;
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
}

/// The journal of durable MQTT state.
pub struct Store {
    file: Mutex<File>,
    path: PathBuf,
    sync: bool,
}

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
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(io(e)),
        };
        let recovered = replay::replay(&bytes);
        let tmp = dir.join("state.log.tmp");
        let mut snapshot = Vec::new();
        for e in recovered.snapshot() {
            e.frame_into(&mut snapshot);
        }
        {
            let mut f = File::create(&tmp).map_err(io)?;
            f.write_all(&snapshot).map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        std::fs::rename(&tmp, &path).map_err(io)?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
        let file = OpenOptions::new().append(true).open(&path).map_err(io)?;
        Ok((
            Store {
                file: Mutex::new(file),
                path,
                sync,
            },
            recovered,
        ))
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

    /// Appends entries already framed with [`Entry::frame_into`], as one write.
    ///
    /// # Errors
    /// The write (or sync) failed; the caller must not acknowledge.
    pub fn append_framed(&self, buf: &[u8]) -> Result<(), StoreError> {
        if buf.is_empty() {
            return Ok(());
        }
        let mut f = self.file.lock();
        let io = |source| StoreError::Io {
            path: self.path.clone(),
            source,
        };
        f.write_all(buf).map_err(io)?;
        if self.sync {
            f.sync_data().map_err(io)?;
        }
        Ok(())
    }
}
