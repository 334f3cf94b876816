//! Deletes the files of segments that retention dropped, on a thread of its own. Unlinking a
//! segment whose pages are cached frees all of them: about a tenth of the server's time at
//! 3 GB/s of 100 kB records (`bench/results/checks-2026-11-23`), spent by whoever appends,
//! which in the broker is the runtime thread every connection shares.
//!
//! Files go in the order `Segment::remove_files` keeps (index first). A failure is kept for
//! [`Log::take_removal_errors`](crate::Log::take_removal_errors); the file then stays, and the
//! next open finds the segment again (retention drops it once more). Dropping the remover
//! waits for what is queued, so the log's directory lock outlives every removal.

use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::segment::Segment;
use crate::LogError;

#[derive(Debug, Default)]
struct Shared {
    /// Segments queued and not yet removed, and the failures seen.
    state: Mutex<(usize, Vec<LogError>)>,
    idle: Condvar,
}

/// The removal thread of one log.
#[derive(Debug)]
pub struct Remover {
    tx: Option<Sender<Box<Segment>>>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl Remover {
    /// Starts the thread; `None` if it cannot be started (then the caller removes inline).
    pub fn start() -> Option<Remover> {
        let (tx, rx) = channel::<Box<Segment>>();
        let shared = Arc::new(Shared::default());
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("fogline-log-rm".into())
            .spawn(move || {
                for seg in rx {
                    let result = seg.remove_files();
                    // Unmapping (when no reader holds the mapping) belongs to the same work.
                    drop(seg);
                    let mut st = lock(&worker.state);
                    st.0 -= 1;
                    if let Err(e) = result {
                        st.1.push(e);
                    }
                    if st.0 == 0 {
                        worker.idle.notify_all();
                    }
                }
            })
            .ok()?;
        Some(Remover {
            tx: Some(tx),
            thread: Some(thread),
            shared,
        })
    }

    /// Queues `seg` for removal.
    pub fn remove(&self, seg: Segment) {
        lock(&self.shared.state).0 += 1;
        if let Some(Err(back)) = self.tx.as_ref().map(|tx| tx.send(Box::new(seg))) {
            // The thread is gone (it panicked): remove here.
            let seg = back.0;
            let result = seg.remove_files();
            let mut st = lock(&self.shared.state);
            st.0 -= 1;
            if let Err(e) = result {
                st.1.push(e);
            }
        }
    }

    /// Returns once every queued segment is removed (or failed).
    pub fn wait(&self) {
        let mut st = lock(&self.shared.state);
        while st.0 > 0 {
            st = self
                .shared
                .idle
                .wait(st)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// The failures seen since the last call.
    pub fn take_errors(&self) -> Vec<LogError> {
        std::mem::take(&mut lock(&self.shared.state).1)
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
