//! The log's housekeeping thread: deletes the files of segments that retention dropped, and
//! runs the page-cache work of drop-behind ([`CacheJob`]). Unlinking a
//! segment whose pages are cached frees all of them: about a tenth of the server's time in a
//! profile of seed004's 100 kB cell (`bench/results/checks-2026-11-23/pf.sh`), spent by
//! whoever appends, which in the broker is the runtime thread every connection shares.
//!
//! Files go in the order `Segment::remove_files` keeps (index first). A failure is kept for
//! [`Log::take_removal_errors`](crate::Log::take_removal_errors); the file then stays, and the
//! next open finds the segment again (retention drops it once more). Without a thread (it
//! could not be started, or it died) removal happens inline, reported the same way. Dropping
//! the remover waits for what is queued, so the log's directory lock outlives every removal.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use crate::cache::CacheJob;
use crate::segment::Segment;
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

    /// Removes `seg`'s files and unmaps it (unless a reader still holds the mapping), then
    /// counts it done.
    fn remove(&self, seg: Box<Segment>) {
        let result = seg.remove_files();
        drop(seg);
        self.done(result.err());
    }

    fn cache(&self, job: CacheJob) {
        job.run();
        self.done(None);
    }

    /// Counts a job done.
    fn done(&self, failure: Option<LogError>) {
        let mut st = self.state();
        st.0 -= 1;
        st.1.extend(failure);
        if st.0 == 0 {
            self.idle.notify_all();
        }
    }
}

/// The removal thread of one log.
/// What the thread does, in the order sent.
enum Job {
    Remove(Box<Segment>),
    Cache(CacheJob),
}

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
            .spawn(move || {
                rx.into_iter().for_each(|job| match job {
                    Job::Remove(seg) => worker.remove(seg),
                    Job::Cache(c) => worker.cache(c),
                })
            })
            .ok();
        Remover {
            tx: thread.as_ref().map(|_| tx),
            thread,
            shared,
        }
    }

    /// Removes `seg`'s files, on the thread if there is one.
    pub fn remove(&self, seg: Segment) {
        self.shared.state().0 += 1;
        let seg = Box::new(seg);
        match &self.tx {
            Some(tx) => {
                if let Err(back) = tx.send(Job::Remove(seg)) {
                    if let Job::Remove(seg) = back.0 {
                        self.shared.remove(seg);
                    }
                }
            }
            None => self.shared.remove(seg),
        }
    }

    /// Runs `job` on the thread if there is one, else now.
    pub fn cache(&self, job: CacheJob) {
        self.shared.state().0 += 1;
        match &self.tx {
            Some(tx) => {
                if let Err(back) = tx.send(Job::Cache(job)) {
                    if let Job::Cache(job) = back.0 {
                        self.shared.cache(job);
                    }
                }
            }
            None => self.shared.cache(job),
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
