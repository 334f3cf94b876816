//! The next segment's file, made ahead on the housekeeping thread (file storage).
//!
//! Creating a segment file reserves its blocks (`posix_fallocate` of 64 MiB: 0.2-30 ms,
//! longest while writeback runs), maps it and faults in its first pages (the first fault
//! zero-fills a readahead window, ~2 ms); done by the roll, all of it stalled the appending
//! thread, which in the broker is the runtime thread every connection shares. So once the
//! active segment is three quarters full, a commit asks the housekeeping thread to make
//! [`NEXT_FILE`] ready, and the roll only renames it to the new segment's name (and, with
//! `fsync` storage, syncs the directory, as a file created by the roll is). The disk holds
//! the next segment a quarter of a segment early; nothing more.
//!
//! A preparation that failed (a full disk) or a file too small for the roll (a record
//! larger than a segment) is removed, and the roll creates its file itself as before,
//! shrinking it to fit a full disk. A crash leaves [`NEXT_FILE`] behind, which the next open
//! removes with the other temporary files; dropping the log removes it too.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use crate::buf::MapBuf;
use crate::segment::{prepare_file, POPULATE_FIRST};
use crate::LogError;

/// The file a segment is prepared in, inside the log's directory (`.log.tmp`: recovery
/// removes it).
pub const NEXT_FILE: &str = "next.log.tmp";

/// A file with its blocks reserved, mapped, its first pages faulted in.
type Ready = Result<(File, MapBuf), LogError>;

#[derive(Debug, Default)]
struct Slot {
    ready: Mutex<Option<Ready>>,
    done: Condvar,
}

/// The next segment, being made or made.
#[derive(Debug)]
pub struct NextSegment {
    path: PathBuf,
    cap: usize,
    slot: Arc<Slot>,
}

/// The work of making it, for the housekeeping thread.
pub struct PrepareJob {
    path: PathBuf,
    cap: usize,
    fsync: bool,
    slot: Arc<Slot>,
}

impl NextSegment {
    /// A segment of `cap` bytes to make in `dir`, and the job that makes it.
    pub fn start(dir: &Path, cap: usize, fsync: bool) -> (NextSegment, PrepareJob) {
        let path = dir.join(NEXT_FILE);
        let slot = Arc::new(Slot::default());
        let job = PrepareJob {
            path: path.clone(),
            cap,
            fsync,
            slot: slot.clone(),
        };
        (NextSegment { path, cap, slot }, job)
    }

    /// The file and its mapping if the job is done, made it and it holds `cap` bytes
    /// (`Ok(None)` and nothing of it left otherwise); `Err(self)` while the job has not
    /// finished: a roll does not wait for it (it may be queued behind other housekeeping),
    /// and hands it back to be [discarded](NextSegment::discard) after the job.
    pub fn try_take(self, cap: usize) -> Result<Option<(File, MapBuf)>, NextSegment> {
        let ready = self
            .slot
            .ready
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match ready {
            None => Err(self),
            Some(ready) => Ok(self.keep(ready, cap)),
        }
    }

    /// The file and its mapping if made with at least `cap` bytes; otherwise nothing of it
    /// is left.
    fn keep(&self, ready: Ready, cap: usize) -> Option<(File, MapBuf)> {
        match ready {
            Ok(made) if self.cap >= cap => Some(made),
            Ok(_) => {
                let _ = std::fs::remove_file(&self.path);
                None
            }
            // The job removed what it had made.
            Err(_) => None,
        }
    }

    /// Removes it, once made (waits for the job).
    pub fn discard(self) {
        let ready = {
            let mut r = self
                .slot
                .ready
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            while r.is_none() {
                r = self
                    .slot
                    .done
                    .wait(r)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            r.take()
        };
        if let Some(Ok(_)) = ready {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl Drop for PrepareJob {
    /// A job dropped without running (its thread gone) still answers whoever waits.
    fn drop(&mut self) {
        let mut r = self
            .slot
            .ready
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if r.is_none() {
            let stopped = std::io::Error::other("the log's housekeeping stopped");
            *r = Some(Err(LogError::io("prepare", &self.path)(stopped)));
            self.slot.done.notify_all();
        }
    }
}

impl PrepareJob {
    /// Makes the file; a failure removes what was made.
    pub fn run(self) {
        let ready = self.make();
        if ready.is_err() {
            let _ = std::fs::remove_file(&self.path);
        }
        *self
            .slot
            .ready
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(ready);
        self.slot.done.notify_all();
    }

    fn make(&self) -> Ready {
        let file = prepare_file(&self.path, self.cap, self.fsync)?;
        let buf = MapBuf::file_rw(&file).map_err(LogError::io("mmap", &self.path))?;
        if self.fsync {
            // As `Segment::recovered` advises, before the first pages are faulted in.
            buf.advise_single_pages(true);
        }
        buf.populate(0, POPULATE_FIRST.min(self.cap));
        Ok((file, buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job dropped unrun (its thread gone) answers: no file, and no wait forever.
    #[test]
    fn a_job_that_never_ran_answers() {
        let dir = tempfile::tempdir().unwrap();
        let (next, job) = NextSegment::start(dir.path(), 1 << 16, false);
        drop(job);
        assert!(matches!(next.try_take(1 << 16), Ok(None)));
        let (next, job) = NextSegment::start(dir.path(), 1 << 16, false);
        drop(job);
        next.discard();
        assert!(!dir.path().join(NEXT_FILE).exists());
    }

    /// A job not yet run is not waited for; one run gives its file, if large enough.
    #[test]
    fn the_roll_takes_only_what_is_ready() {
        let dir = tempfile::tempdir().unwrap();
        let (next, job) = NextSegment::start(dir.path(), 1 << 16, false);
        let next = next.try_take(1 << 16).unwrap_err();
        job.run();
        assert!(next.try_take(1 << 16).unwrap().is_some());
        let (next, job) = NextSegment::start(dir.path(), 1 << 16, false);
        job.run();
        assert!(next.try_take(1 << 17).unwrap().is_none(), "too small");
        assert!(!dir.path().join(NEXT_FILE).exists());
    }
}
