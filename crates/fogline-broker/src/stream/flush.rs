//! Group commit of `fsync` storage: one flusher task per stream makes what was appended
//! durable and visible, and publishers wait for the flush that covers their records.

use std::sync::atomic::{Ordering::Relaxed, Ordering::SeqCst};
use std::sync::Arc;

use fogline_log::{LogError, SyncJob};

use super::Stream;
use crate::error::BrokerError;

impl Stream {
    /// Whether every record before `upto` is durable: `Some(Ok)` yes (or the storage is not
    /// `fsync`), `Some(Err)` never (a flush failed), `None` not yet.
    pub fn durable_state(&self, upto: u64) -> Option<Result<(), BrokerError>> {
        if !self.group_commit {
            return Some(Ok(()));
        }
        // Broken checked with the log locked, as a failed roll marks it: a record a roll
        // committed after a failed flush is not known durable.
        let log = self.log.lock();
        if let Err(e) = self.check_broken() {
            return Some(Err(e));
        }
        (log.committed_offset() >= upto).then_some(Ok(()))
    }

    /// Returns once every record before offset `upto` (what [`Stream::append`] returned for
    /// them) is durable and visible; at once unless the storage is `fsync`. It starts no
    /// flush: the appender calls [`Stream::flush_soon`]. There a single flusher task per stream
    /// runs `msync` on a blocking thread over everything appended
    /// before each flush began, and the publishers wait for it: the batches of all publishers
    /// that arrive during one flush share the next (group commit). No publisher's task runs
    /// flushes for others, so none is held up by a steady stream of later appends.
    ///
    /// # Errors
    /// [`BrokerError::Storage`] when a flush failed before these records were durable. The
    /// stream then takes no more records until a restart recovers it from disk: after a failed
    /// `msync` the kernel may already have dropped the pages' error, so a retry that succeeds
    /// proves nothing (the records may be lost, or may come back after the restart: at least
    /// once). Once broken, every wait fails, also one for records a flush covered before: a
    /// roll's own flush can have taken the error meant for another, so the stream no longer
    /// tells what is durable (a publisher that retries may duplicate).
    pub async fn durable_until(&self, upto: u64) -> Result<(), BrokerError> {
        loop {
            let notified = self.synced.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(state) = self.durable_state(upto) {
                return state;
            }
            notified.await;
        }
    }

    pub(super) fn check_broken(&self) -> Result<(), BrokerError> {
        match self.broken.lock().as_deref() {
            None => Ok(()),
            Some(why) => Err(self.flush_error(format!(
                "an earlier flush failed ({why}); the stream takes no more records until the \
                 server restarts"
            ))),
        }
    }

    /// A flush failure that did not come from the log itself.
    fn flush_error(&self, why: impl std::fmt::Display) -> BrokerError {
        self.storage_err(LogError::Io {
            op: "msync",
            path: self.dir.clone().unwrap_or_default(),
            source: std::io::Error::other(why.to_string()),
        })
    }

    /// Test hook: while `hold` is true, flushes wait before they start, so appended records
    /// stay not yet durable (as on a slow disk).
    #[doc(hidden)]
    pub fn hold_flushes(&self, hold: bool) {
        self.hold.send_replace(hold);
    }

    /// Test hook: makes the next flush fail as a failed writeback would: that flush, and every
    /// later one of its segment (also a roll's seal while the flusher is held).
    #[doc(hidden)]
    pub fn fail_next_flush(&self) {
        self.fail_next.store(true, SeqCst);
    }

    /// With `fsync` storage, makes sure a flush will cover what was appended so far: starts
    /// the stream's flusher task unless it runs (it then covers it). Fire-and-forget
    /// publishers call only this.
    pub fn flush_soon(self: &Arc<Self>) {
        if self.group_commit
            && !self.syncing.load(SeqCst)
            && self.broken.lock().is_none()
            && self.try_lead()
        {
            let stream = self.clone();
            tokio::spawn(async move { stream.flusher().await });
        }
    }

    fn try_lead(&self) -> bool {
        self.syncing
            .compare_exchange(false, true, SeqCst, SeqCst)
            .is_ok()
    }

    /// The flusher: flushes until nothing appended is left unflushed, or a flush fails (the
    /// stream is then broken). After letting go of `syncing` it looks once more: a record
    /// appended after its last look, by a task that saw `syncing` still set, would otherwise
    /// wait for the next publish. Its guard lets go however it ends (also when the runtime
    /// drops it), so waiters never wait for a flusher that is gone.
    async fn flusher(self: Arc<Self>) {
        let mut hold = Flushing {
            stream: &self,
            held: true,
        };
        loop {
            loop {
                let job = self.log.lock().sync_job();
                let Some(job) = job else { break };
                if let Err(e) = self.flush(job).await {
                    tracing::error!(stream = %self.name, error = %e, "flush failed; the stream takes no more records until restarted");
                    *self.broken.lock() = Some(e.to_string());
                    return;
                }
                self.synced.notify_waiters();
            }
            hold.release();
            if self.log.lock().sync_job().is_none() || !self.try_lead() {
                return;
            }
            hold.held = true;
        }
    }

    async fn flush(&self, job: SyncJob) -> Result<(), BrokerError> {
        if self.fail_next.swap(false, SeqCst) {
            // As a writeback that failed now: the segment's flushes fail from here on, also a
            // roll's while this flusher is held.
            job.inject_failure();
        }
        if *self.hold.borrow() {
            // The sender lives as long as the stream, so the wait cannot fail.
            let _ = self.hold.subscribe().wait_for(|held| !*held).await;
        }
        let (job, result, took) = tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let r = job.run();
            (job, r, started.elapsed())
        })
        .await
        .map_err(|e| self.flush_error(e))?;
        result.map_err(|e| self.storage_err(e))?;
        self.flushes.fetch_add(1, Relaxed);
        self.flush_times.observe(took);
        let next = {
            let mut log = self.log.lock();
            log.finish_sync(&job);
            log.committed_offset()
        };
        self.tail.set(next);
        Ok(())
    }
}

/// The flusher's hold on `syncing`: let go (and waiters woken) however the flusher ends.
struct Flushing<'a> {
    stream: &'a Stream,
    held: bool,
}

impl Flushing<'_> {
    fn release(&mut self) {
        if self.held {
            self.held = false;
            self.stream.syncing.store(false, SeqCst);
            self.stream.synced.notify_waiters();
        }
    }
}

impl Drop for Flushing<'_> {
    fn drop(&mut self) {
        self.release();
    }
}
