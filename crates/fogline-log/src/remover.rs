//! The log's housekeeping thread: finishes seals ([`SealFiles`]: cut, sync and index a
//! sealed segment's file), deletes the files of segments that retention dropped, drops
//! sealed segments' pages ([`SealedPages`], drop-behind), and makes the next segment's file
//! ([`PrepareJob`]). Unlinking a
//! segment whose pages are cached frees all of them: about a tenth of the server's time in a
//! profile of seed004's 100 kB cell (`bench/results/checks-2026-11-23/pf.sh`), spent by
//! whoever appends, which in the broker is the runtime thread every connection shares.
//!
//! Jobs run in the order sent, so a segment's seal is done before its pages are dropped or
//! its files removed. Files go in the order `Segment::remove_files` keeps (index first). A
//! failure (of a removal or of a seal's file work) is kept for
//! [`Log::take_removal_errors`](crate::Log::take_removal_errors); the file then stays, and the
//! next open finds the segment again (retention drops it once more). Without a thread (it
//! could not be started, or it died) removal happens inline, reported the same way. Dropping
//! the remover waits for what is queued, so the log's directory lock outlives every removal.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crate::cache::SealedPages;
use crate::prepare::{NextSegment, PrepareJob};
use crate::segment::{SealFiles, Segment};
use crate::LogError;

#[derive(Debug, Default)]
struct Shared {
    /// Jobs queued and not yet done, and the removals that failed.
    state: Mutex<(usize, Vec<LogError>)>,
    idle: Condvar,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, (usize, Vec<LogError>)> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Does `job`, then counts it done: a removed segment's files go, and its mapping with
    /// it (unless a reader still holds the mapping), before the count.
    fn run(&self, job: Job) {
        // A job that panics is counted done and reported; the thread goes on, so jobs
        // queued after it (and whoever waits for them) are not lost.
        let work = std::panic::AssertUnwindSafe(|| match job {
            Job::Seal(files) => files.run().err(),
            Job::Remove(seg) => seg.remove_files().err(),
            Job::Drop(pages) => {
                pages.drop_cached();
                None
            }
            // Its outcome goes to the roll, which creates the file itself after a failure.
            Job::Prepare(job) => {
                job.run();
                None
            }
            Job::Discard(next) => {
                next.discard();
                None
            }
        });
        let failure = std::panic::catch_unwind(work).unwrap_or_else(|_| {
            let panicked = std::io::Error::other("a housekeeping job panicked");
            Some(LogError::io("housekeeping", "(log)")(panicked))
        });
        let mut st = self.state();
        st.0 -= 1;
        st.1.extend(failure);
        if st.0 == 0 {
            self.idle.notify_all();
        }
    }
}

/// What the thread does, in the order sent.
enum Job {
    Seal(Box<SealFiles>),
    Remove(Box<Segment>),
    Drop(SealedPages),
    Prepare(PrepareJob),
    Discard(NextSegment),
}

/// The housekeeping thread of one log.
#[derive(Debug, Default)]
pub struct Remover {
    tx: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl Remover {
    /// Starts the thread (without one, [`Remover::remove`] works inline).
    pub fn start() -> Remover {
        let (tx, rx) = channel::<Job>();
        let shared = Arc::new(Shared::default());
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("fogline-log-rm".into())
            .spawn(move || rx.into_iter().for_each(|job| worker.run(job)))
            .ok();
        Remover {
            tx: thread.as_ref().map(|_| tx),
            thread,
            shared,
        }
    }

    /// Removes `seg`'s files, on the thread if there is one.
    pub fn remove(&self, seg: Segment) {
        self.submit(Job::Remove(Box::new(seg)));
    }

    /// Finishes a seal's file work, on the thread if there is one.
    pub fn seal(&self, files: SealFiles) {
        self.submit(Job::Seal(Box::new(files)));
    }

    /// Drops a sealed segment's pages, on the thread if there is one.
    pub fn drop_pages(&self, pages: SealedPages) {
        self.submit(Job::Drop(pages));
    }

    /// Makes the next segment's file, on the thread if there is one.
    pub fn prepare(&self, job: PrepareJob) {
        self.submit(Job::Prepare(job));
    }

    /// Removes a next segment's file once its job is done (a roll that did not wait).
    pub fn discard(&self, next: NextSegment) {
        self.submit(Job::Discard(next));
    }

    fn submit(&self, job: Job) {
        self.shared.state().0 += 1;
        match &self.tx {
            Some(tx) => {
                if let Err(back) = tx.send(job) {
                    self.shared.run(back.0);
                }
            }
            None => self.shared.run(job),
        }
    }

    /// Returns once every queued job is done (segments removed, or failed).
    pub fn wait(&self) {
        let mut st = self.shared.state();
        while st.0 > 0 {
            st = self
                .shared
                .idle
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// The failures seen since the last call.
    pub fn take_errors(&self) -> Vec<LogError> {
        std::mem::take(&mut self.shared.state().1)
    }
}

impl Drop for Remover {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
