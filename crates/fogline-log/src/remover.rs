//! Deletes the files of segments that retention dropped, on a thread of its own. Unlinking a
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

use crate::segment::Segment;
use crate::LogError;

#[derive(Debug, Default)]
struct Shared {
    /// Segments queued and not yet removed, and the failures seen.
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
        let mut st = self.state();
        st.0 -= 1;
        if let Err(e) = result {
            st.1.push(e);
        }
        if st.0 == 0 {
            self.idle.notify_all();
        }
    }
}

/// The removal thread of one log.
#[derive(Debug, Default)]
pub struct Remover {
    tx: Option<Sender<Box<Segment>>>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl Remover {
    /// Starts the thread (without one, [`Remover::remove`] works inline).
    pub fn start() -> Remover {
        let (tx, rx) = channel::<Box<Segment>>();
        let shared = Arc::new(Shared::default());
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("fogline-log-rm".into())
            .spawn(move || rx.into_iter().for_each(|seg| worker.remove(seg)))
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
                if let Err(back) = tx.send(seg) {
                    self.shared.remove(back.0);
                }
            }
            None => self.shared.remove(seg),
        }
    }

    /// Returns once every queued segment is removed (or failed).
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
