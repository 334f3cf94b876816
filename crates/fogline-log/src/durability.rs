//! The log's durability points, and a hook that lets a test watch them.
//!
//! Every flush that makes data durable goes through this module: the `msync(MS_SYNC)` of a
//! range of a segment's mapping (a commit, a [`SyncJob`](crate::SyncJob), recovery's repairs),
//! the `fsync` of a file (a new segment's preallocation, a seal's truncation, an index, a
//! repaired sealed segment) and the `fsync` of a directory (its entries: created, renamed and
//! removed files). Nothing else reaches the disk for sure before a power cut.
//!
//! The power-cut test (`tests/power_cut`) installs a hook with [`set_sync_hook`]. It is told
//! of each durability point once it succeeded, and from them builds what a power cut at that
//! moment may leave on disk: synced bytes as they were synced, unsynced pages old or new,
//! directory entries as of the directory's last fsync. Without a hook (every process but that
//! test) a durability point costs one more atomic load next to a system call that waits for
//! the disk.

use crate::buf::MapBuf;
use crate::LogError;
use std::fs::File;
use std::path::Path;
use std::sync::OnceLock;

/// A durability point that succeeded, as told to the hook.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum Synced<'a> {
    /// `msync(MS_SYNC)` of bytes `[start, end)` of the file at `path`, through its shared
    /// mapping: those bytes are durable, and so is the file's length (a data sync includes
    /// the size needed to read them back).
    Range {
        /// The file.
        path: &'a Path,
        /// First byte synced.
        start: usize,
        /// One past the last byte synced.
        end: usize,
    },
    /// `fsync` of `file`, which is at `path`: its whole content and length are durable (its
    /// name is not, until its directory is synced).
    File {
        /// The file's path when it was synced.
        path: &'a Path,
        /// The open file.
        file: &'a File,
    },
    /// `fsync` of the directory at `path`: its entries are durable as they are now.
    Dir {
        /// The directory.
        path: &'a Path,
    },
}

type Hook = Box<dyn Fn(Synced<'_>) + Send + Sync>;

static HOOK: OnceLock<Hook> = OnceLock::new();

/// Test hook: calls `hook` after every durability point of every log in the process, on the
/// thread that made it (a writer, a [`SyncJob`](crate::SyncJob)'s runner, the thread that
/// removes retention's files). It can be set once per process; false if one is set already.
#[doc(hidden)]
pub fn set_sync_hook(hook: impl Fn(Synced<'_>) + Send + Sync + 'static) -> bool {
    HOOK.set(Box::new(hook)).is_ok()
}

fn report(synced: Synced<'_>) {
    if let Some(hook) = HOOK.get() {
        hook(synced);
    }
}

/// `msync(MS_SYNC)` of `[start, end)` of `buf`, the mapping of the file at `path`.
pub fn sync_range(buf: &MapBuf, path: &Path, start: usize, end: usize) -> Result<(), LogError> {
    if end > start {
        buf.flush(start, end).map_err(LogError::io("msync", path))?;
        report(Synced::Range { path, start, end });
    }
    Ok(())
}

/// `fsync` of `file` (at `path`): content, length and other metadata.
pub fn sync_file(file: &File, path: &Path) -> Result<(), LogError> {
    file.sync_all().map_err(LogError::io("fsync", path))?;
    report(Synced::File { path, file });
    Ok(())
}

/// `fsync` of a directory, so created, renamed or removed entries are durable.
pub fn sync_dir(dir: &Path) -> Result<(), LogError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(LogError::io("fsync directory", dir))?;
    report(Synced::Dir { path: dir });
    Ok(())
}
