//! Durable consumers' positions, written to `consumers/<name>` by a thread of each
//! file-backed stream rather than by whoever acks. A write (create, write, with `fsync`
//! storage an fsync, rename) costs from tens of microseconds to milliseconds on a small
//! board's flash, and the thread that acks is a runtime thread, on a one-thread runtime the
//! one every connection shares.
//!
//! What is promised does not change: a reopen resumes from the position in memory, which the
//! caller updates before it queues the write; after a crash the records acked since the last
//! write are delivered again (at least once). Positions queued for one name are merged, so
//! only the newest is written, by one thread, so never an older one over a newer one, and
//! names take turns. A failed write is reported to the next store of that name and tried
//! again a second later. [`Positions::sync`] waits until every queued position is written,
//! and dropping the writer waits too. The thread starts with a stream's first position.
//! A deleted consumer's file is removed by the same thread, in turn with its writes, so an
//! older position can never bring it back; a deleted stream's writer is retired before its
//! directory goes.
//!
//! A position file holds the floor in decimal, then, for a consumer bound to a user (see
//! `stream::durables`), a line `owner NAME`.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex, MutexGuard};

/// How long a failed write waits before it is tried again.
const RETRY: Duration = Duration::from_secs(1);

/// What a position file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Saved {
    /// Every record below it was acknowledged.
    pub floor: u64,
    /// The user the consumer is bound to, if any.
    pub owner: Option<Arc<str>>,
}

impl Saved {
    /// The file's text. The owner runs to the end of the file, so any name reads back
    /// as it was (a certificate's CN may hold a line break).
    fn text(&self) -> String {
        match &self.owner {
            None => self.floor.to_string(),
            Some(owner) => format!("{}\nowner {owner}", self.floor),
        }
    }

    /// A file's text read back; `None` if it is not one.
    pub fn parse(text: &str) -> Option<Saved> {
        let (floor, rest) = text.split_once('\n').unwrap_or((text, ""));
        let floor = floor.trim().parse().ok()?;
        let owner = match rest.trim().is_empty() {
            true => None,
            false => Some(Arc::from(rest.strip_prefix("owner ")?)),
        };
        Some(Saved { floor, owner })
    }
}

#[derive(Default)]
struct State {
    /// The newest position of each name not yet written; `None`: remove its file.
    queued: HashMap<String, Option<Saved>>,
    /// The names in `queued`, oldest first: every consumer gets its turn.
    order: VecDeque<String>,
    /// A write is under way.
    writing: bool,
    /// Why the last write of a name failed, until its next store is told.
    failed: HashMap<String, String>,
    /// Positions whose write failed, queued again at `retry_at` (a newer store of the name
    /// replaces its entry).
    retry: HashMap<String, Option<Saved>>,
    retry_at: Option<Instant>,
    /// The writer drains what is queued and ends (what waits for a retry is dropped).
    closed: bool,
    /// Test hook: nothing is written while it is set (see [`Positions::hold`]).
    held: bool,
    /// The stream was deleted: nothing is queued or written any more.
    retired: bool,
}

impl State {
    fn queue(&mut self, name: &str, floor: Option<Saved>) {
        if self.queued.insert(name.to_string(), floor).is_none() {
            self.order.push_back(name.to_string());
        }
        self.retry.remove(name);
    }
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the writer (work, closing, release) and [`Positions::sync`] (a write done).
    changed: Condvar,
    /// The stream's `consumers` directory.
    dir: PathBuf,
    fsync: bool,
}

/// The position writer of one stream.
pub(crate) struct Positions {
    shared: Arc<Shared>,
    /// None when the thread could not be started: positions are then written inline.
    thread: Option<JoinHandle<()>>,
}

impl Positions {
    /// Starts the writer for `dir` (the stream's `consumers` directory).
    pub fn start(dir: PathBuf, fsync: bool) -> Positions {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            dir,
            fsync,
        });
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("fogline-positions".into())
            .spawn(move || worker.run());
        let thread = match thread {
            Ok(t) => Some(t),
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the consumer position writer; positions are written inline");
                None
            }
        };
        Positions { shared, thread }
    }

    /// Queues `saved` as the position of `name`.
    ///
    /// # Errors
    /// An earlier write of `name` failed (told once; it is tried again unless this newer
    /// position replaces it), or, without a writer thread, this one.
    pub fn store(&self, name: &str, saved: Saved) -> Result<(), String> {
        if self.thread.is_none() {
            if self.shared.state.lock().retired {
                return Ok(());
            }
            return write(&self.shared.dir, name, Some(&saved), self.shared.fsync);
        }
        let mut st = self.shared.state.lock();
        if st.retired {
            return Ok(());
        }
        st.queue(name, Some(saved));
        let failed = st.failed.remove(name);
        drop(st);
        self.shared.changed.notify_all();
        failed.map_or(Ok(()), Err)
    }

    /// Waits until every position queued so far is written, or failed (a failed one is
    /// tried again later). Blocks: call it off the runtime threads, and not while
    /// [`hold`](Positions::hold) is set.
    pub fn sync(&self) {
        if self.thread.is_none() {
            return;
        }
        let mut st = self.shared.state.lock();
        while !st.order.is_empty() || st.writing {
            self.shared.changed.wait(&mut st);
        }
    }

    /// Removes the position file of `name`, after any write of it queued before; returns
    /// once it is gone. Blocks.
    ///
    /// # Errors
    /// The file could not be removed.
    pub fn remove(&self, name: &str) -> Result<(), String> {
        if self.thread.is_none() {
            return write(&self.shared.dir, name, None, self.shared.fsync);
        }
        let mut st = self.shared.state.lock();
        st.queue(name, None);
        st.failed.remove(name);
        self.shared.changed.notify_all();
        while st.queued.contains_key(name) || st.writing {
            self.shared.changed.wait(&mut st);
        }
        match st.failed.remove(name) {
            Some(why) => {
                st.retry.remove(name);
                Err(why)
            }
            None => Ok(()),
        }
    }

    /// Stops writing for good (the stream is being deleted): what is queued is dropped, a
    /// write under way finishes first, and later stores are ignored. Blocks.
    pub fn retire(&self) {
        let mut st = self.shared.state.lock();
        st.retired = true;
        st.closed = true;
        st.queued.clear();
        st.order.clear();
        st.retry.clear();
        st.retry_at = None;
        self.shared.changed.notify_all();
        while st.writing {
            self.shared.changed.wait(&mut st);
        }
    }

    /// Test hook: while `hold` is set nothing is written (positions stay queued).
    pub fn hold(&self, hold: bool) {
        self.shared.state.lock().held = hold;
        self.shared.changed.notify_all();
    }
}

impl Drop for Positions {
    fn drop(&mut self) {
        self.shared.state.lock().closed = true;
        self.shared.changed.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Shared {
    fn run(&self) {
        let mut st = self.state.lock();
        loop {
            if !st.held || st.closed {
                if let Some(name) = st.order.pop_front() {
                    self.write_one(&mut st, name);
                    continue;
                }
            }
            if st.closed {
                return;
            }
            match st.retry_at {
                Some(at) if !st.held => {
                    if Instant::now() >= at {
                        st.retry_at = None;
                        let again: Vec<(String, Option<Saved>)> = st.retry.drain().collect();
                        for (name, floor) in again {
                            st.queue(&name, floor);
                        }
                    } else {
                        self.changed.wait_until(&mut st, at);
                    }
                }
                _ => self.changed.wait(&mut st),
            }
        }
    }

    fn write_one(&self, st: &mut MutexGuard<'_, State>, name: String) {
        let Some(floor) = st.queued.remove(&name) else {
            return;
        };
        st.writing = true;
        let result =
            MutexGuard::unlocked(st, || write(&self.dir, &name, floor.as_ref(), self.fsync));
        st.writing = false;
        match result {
            Ok(()) => {
                st.failed.remove(&name);
            }
            Err(why) => {
                tracing::warn!(consumer = %name, error = %why, "cannot write a consumer position; trying again in a second");
                st.failed.insert(name.clone(), why);
                if !st.queued.contains_key(&name) {
                    st.retry.insert(name, floor);
                    st.retry_at.get_or_insert_with(|| Instant::now() + RETRY);
                }
            }
        }
        self.changed.notify_all();
    }
}

/// Writes `dir/name` whole: a temporary file renamed over it, so a crash leaves the old
/// position or the new one; with `fsync`, the file and then the directory are synced.
/// `None` removes the file.
fn write(dir: &Path, name: &str, floor: Option<&Saved>, fsync: bool) -> Result<(), String> {
    let fail = |what: &str, e: std::io::Error| format!("{what} {}: {e}", dir.join(name).display());
    let Some(floor) = floor else {
        match std::fs::remove_file(dir.join(name)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(fail("removing", e)),
            _ => {}
        }
        if fsync {
            sync(dir).map_err(|e| fail("syncing the directory of", e))?;
        }
        return Ok(());
    };
    std::fs::create_dir_all(dir).map_err(|e| fail("creating the directory of", e))?;
    let tmp = dir.join(format!(".{name}.tmp"));
    std::fs::write(&tmp, floor.text()).map_err(|e| fail("writing", e))?;
    if fsync {
        sync(&tmp).map_err(|e| fail("syncing", e))?;
    }
    std::fs::rename(&tmp, dir.join(name)).map_err(|e| fail("renaming", e))?;
    if fsync {
        sync(dir).map_err(|e| fail("syncing the directory of", e))?;
    }
    Ok(())
}

fn sync(path: &Path) -> std::io::Result<()> {
    std::fs::File::open(path)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_positions_read_back() {
        for owner in [None, Some("alice"), Some("CN with\na break ")] {
            let saved = Saved {
                floor: 42,
                owner: owner.map(Arc::from),
            };
            assert_eq!(Saved::parse(&saved.text()), Some(saved), "{owner:?}");
        }
        // The files written before owners: a number alone.
        assert_eq!(
            Saved::parse("17"),
            Some(Saved {
                floor: 17,
                owner: None
            })
        );
        assert_eq!(
            Saved::parse("17\n"),
            Some(Saved {
                floor: 17,
                owner: None
            })
        );
        for bad in ["", "x", "17\nsomething else", "-1"] {
            assert_eq!(Saved::parse(bad), None, "{bad:?}");
        }
    }
}
