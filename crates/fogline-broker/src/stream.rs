//! A stream: a named log capturing the records whose topics match its subjects.
//!
//! On disk a file-backed stream is a directory `<data_dir>/<name>/` holding the
//! log's segments and `consumers/<consumer name>`, each a decimal offset: the
//! durable consumer's acknowledged floor (every record below it was acked).
//! Positions are written to a temporary file and renamed, so a crash leaves
//! either the old or the new position (at-least-once, never a skipped record).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::Arc;

use fogline_log::{Log, LogError, LogOptions, LogStats, Record, RecoveryReport, SyncJob};
use parking_lot::{Mutex, MutexGuard};
use tokio::sync::Notify;

use crate::batch::Batch;
use crate::config::{valid_stream_name, BrokerConfig, StorageMode, StreamConfig};
use crate::error::BrokerError;
use crate::positions::Positions;
use crate::tail::Tail;

/// One stream and its log.
pub struct Stream {
    name: String,
    subjects: Vec<String>,
    storage: StorageMode,
    dir: Option<PathBuf>,
    log: Mutex<Log>,
    tail: Tail,
    durables: Mutex<Durables>,
    /// Writes durable consumers' positions (file-backed streams; started with the first).
    positions: std::sync::OnceLock<Positions>,
    /// `fsync` storage: appends become durable and visible by group commit
    /// ([`Stream::durable_until`]) rather than one `msync` per batch on the caller's thread.
    group_commit: bool,
    /// The flusher task runs ([`Stream::flush_soon`]).
    syncing: AtomicBool,
    /// A flush finished, or the flusher stopped.
    synced: Notify,
    /// Flushes done by group commit.
    flushes: AtomicU64,
    /// Set by a failed flush: the stream then takes no more records (see [`Stream::durable_until`]).
    broken: Mutex<Option<String>>,
    /// Test hook: the next flush fails ([`Stream::fail_next_flush`]).
    fail_next: AtomicBool,
    /// Test hook: flushes wait while it is true ([`Stream::hold_flushes`]).
    hold: tokio::sync::watch::Sender<bool>,
}

#[derive(Default)]
struct Durables {
    floors: HashMap<String, u64>,
    open: HashSet<String>,
}

impl Stream {
    /// Opens (recovering) or creates the stream described by `cfg`.
    ///
    /// # Errors
    /// Invalid names or filters, or a log that cannot be opened at all.
    pub fn open(
        cfg: &StreamConfig,
        broker: &BrokerConfig,
    ) -> Result<(Stream, RecoveryReport), BrokerError> {
        if !valid_stream_name(&cfg.name) {
            return Err(BrokerError::Config(format!(
                "invalid stream name {:?}",
                cfg.name
            )));
        }
        if cfg.subjects.is_empty() {
            return Err(BrokerError::Config(format!(
                "stream {:?} has no subjects",
                cfg.name
            )));
        }
        for s in &cfg.subjects {
            fogline_wire::validate_filter(s).map_err(|e| {
                BrokerError::Config(format!("stream {:?} subject {s:?}: {e}", cfg.name))
            })?;
        }
        let storage = cfg.storage.unwrap_or(broker.storage);
        let dir = (storage != StorageMode::Memory).then(|| broker.data_dir.join(&cfg.name));
        let opts = LogOptions {
            storage: storage.to_log(),
            dir: dir.clone(),
            segment_bytes: cfg.segment_bytes.unwrap_or(broker.segment_bytes).as_u64(),
            retention_bytes: retention_bytes(cfg, broker, storage),
            retention_age: cfg.retention_age.or(broker.retention_age),
            max_record_bytes: record_limit(broker),
        };
        let storage_err = |source| BrokerError::Storage {
            stream: cfg.name.clone(),
            source,
        };
        let (log, report) = Log::open(opts).map_err(storage_err)?;
        let floors = match &dir {
            Some(d) => load_floors(&d.join("consumers"))?,
            None => HashMap::new(),
        };
        let next = log.next_offset();
        Ok((
            Stream {
                name: cfg.name.clone(),
                subjects: cfg.subjects.clone(),
                storage,
                dir,
                log: Mutex::new(log),
                tail: Tail::new(next),
                durables: Mutex::new(Durables {
                    floors,
                    open: HashSet::new(),
                }),
                positions: std::sync::OnceLock::new(),
                group_commit: storage == StorageMode::Fsync,
                syncing: AtomicBool::new(false),
                synced: Notify::new(),
                flushes: AtomicU64::new(0),
                broken: Mutex::new(None),
                fail_next: AtomicBool::new(false),
                hold: tokio::sync::watch::Sender::new(false),
            },
            report,
        ))
    }

    /// The stream's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The topic filters it captures.
    pub fn subjects(&self) -> &[String] {
        &self.subjects
    }

    /// Its storage mode.
    pub fn storage(&self) -> StorageMode {
        self.storage
    }

    /// True when a record on `topic` belongs in this stream.
    pub fn captures(&self, topic: &str) -> bool {
        self.subjects
            .iter()
            .any(|f| fogline_wire::filter_matches(f, topic))
    }

    /// Appends every record of `batch` and commits them, except with `fsync`
    /// storage: there they become durable and visible through [`Stream::durable_until`]
    /// or [`Stream::flush_soon`].
    ///
    /// # Errors
    /// [`BrokerError::Storage`] when the log fails: then no record of the batch is in
    /// the log (room for all of them is made first), so a retry duplicates nothing.
    pub fn append(&self, batch: &Batch) -> Result<u64, BrokerError> {
        let log = self.reserve(batch)?;
        self.append_reserved(log, batch)
    }

    /// The first half of [`append`](Stream::append): the stream's log, locked, with room
    /// for the whole batch. A batch for several streams holds all their logs before it is
    /// appended to any (see `Broker::store`).
    pub(crate) fn reserve(&self, batch: &Batch) -> Result<MutexGuard<'_, Log>, BrokerError> {
        if self.group_commit {
            self.check_broken()?;
        }
        let mut log = self.log.lock();
        let records = &batch.records;
        let need = fogline_log::records_len(
            records.count() as usize,
            batch.topic.len(),
            records.content_len(),
        );
        if let Err(e) = log.reserve(need) {
            return Err(self.log_failed(e));
        }
        Ok(log)
    }

    /// The second half of [`append`](Stream::append), on the log [`reserve`](Stream::reserve)
    /// returned.
    pub(crate) fn append_reserved(
        &self,
        mut log: MutexGuard<'_, Log>,
        batch: &Batch,
    ) -> Result<u64, BrokerError> {
        let topic = batch.topic.as_bytes();
        for rec in batch.records.iter_ref() {
            // A producer's clock may run ahead: a future timestamp would pin
            // every later record (log timestamps never go back), so clamp it.
            let ts = if rec.timestamp == 0 || rec.timestamp > batch.timestamp {
                batch.timestamp
            } else {
                rec.timestamp
            };
            if let Err(e) = log.append(ts, topic, rec.headers, rec.payload) {
                // Only a record the log refuses (too large) gets here: none of them rolls.
                return Err(self.log_failed(e));
            }
        }
        let next = log.next_offset();
        if self.group_commit {
            // A segment roll sealed (and so committed) what came before it.
            let committed = log.committed_offset();
            drop(log);
            self.tail.set(committed);
            return Ok(next);
        }
        log.commit().map_err(|e| self.storage_err(e))?;
        drop(log);
        self.tail.set(next);
        Ok(next)
    }

    /// The error for a failed append or reserve.
    fn log_failed(&self, e: fogline_log::LogError) -> BrokerError {
        if self.group_commit {
            // A roll's flush may have failed, or have taken an error meant for a
            // concurrent flush (Linux reports a writeback error once): what was
            // appended before is no longer known durable.
            *self.broken.lock() = Some(e.to_string());
        }
        self.storage_err(e)
    }

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

    fn check_broken(&self) -> Result<(), BrokerError> {
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
        let (job, result) = tokio::task::spawn_blocking(move || {
            let r = job.run();
            (job, r)
        })
        .await
        .map_err(|e| self.flush_error(e))?;
        result.map_err(|e| self.storage_err(e))?;
        self.flushes.fetch_add(1, Relaxed);
        let next = {
            let mut log = self.log.lock();
            log.finish_sync(&job);
            log.committed_offset()
        };
        self.tail.set(next);
        Ok(())
    }

    /// Reads up to `max_records` records from offset `from` (or the first retained one).
    ///
    /// # Errors
    /// [`BrokerError::Storage`] when the log cannot be read.
    pub fn read(
        &self,
        from: u64,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<Vec<Record>, BrokerError> {
        self.log
            .lock()
            .read(from, max_records, max_bytes)
            .map_err(|e| self.storage_err(e))
    }

    /// First offset whose timestamp is at or after `timestamp` (microseconds).
    pub fn offset_for_time(&self, timestamp: u64) -> u64 {
        self.log.lock().offset_for_time(timestamp)
    }

    /// The oldest retained offset, and the end of what reads see (with `fsync` storage,
    /// records not flushed yet are past it).
    pub fn bounds(&self) -> (u64, u64) {
        let log = self.log.lock();
        (log.first_offset(), log.committed_offset())
    }

    /// Returns once records past `cursor` are committed (at once if they are).
    pub async fn wait_past(&self, cursor: u64) {
        self.tail.wait_past(cursor).await;
    }

    /// Counters of the underlying log.
    pub fn stats(&self) -> LogStats {
        self.log.lock().stats()
    }

    /// Flushes made by group commit (`fsync` storage; each covers every batch appended
    /// before it began).
    pub fn flushes(&self) -> u64 {
        self.flushes.load(Relaxed)
    }

    /// Number of durable consumers currently open.
    pub fn open_consumers(&self) -> usize {
        self.durables.lock().open.len()
    }

    /// Drops segments past the retention limits; their files are deleted off this thread,
    /// and deletions that failed since the last call are logged.
    pub fn enforce_retention(&self, now_us: u64) {
        let mut log = self.log.lock();
        log.enforce_retention(now_us);
        for e in log.take_removal_errors() {
            tracing::warn!(stream = %self.name, error = %e, "cannot delete a dropped segment's file; it is found again on the next start");
        }
    }

    /// Marks durable consumer `name` open and returns its stored floor.
    pub(crate) fn claim_durable(&self, name: &str) -> Result<Option<u64>, BrokerError> {
        let mut d = self.durables.lock();
        if !d.open.insert(name.to_string()) {
            return Err(BrokerError::ConsumerInUse(name.to_string()));
        }
        Ok(d.floors.get(name).copied())
    }

    /// Marks durable consumer `name` closed.
    pub(crate) fn release_durable(&self, name: &str) {
        self.durables.lock().open.remove(name);
    }

    /// Remembers a durable floor (a reopen resumes from it) and, for file-backed streams,
    /// queues it for the position writer (see [`crate::positions`]).
    ///
    /// # Errors
    /// The last write of this consumer's position failed (told once).
    pub(crate) fn store_floor(&self, name: &str, floor: u64) -> Result<(), BrokerError> {
        self.durables.lock().floors.insert(name.to_string(), floor);
        let Some(positions) = self.positions() else {
            return Ok(());
        };
        positions.store(name, floor).map_err(|why| {
            let context = format!("stream {}: consumer position {name}", self.name);
            BrokerError::io(context, std::io::Error::other(why))
        })
    }

    /// Waits until every consumer position stored so far is written to disk. Blocks.
    pub fn sync_positions(&self) {
        if let Some(p) = self.positions.get() {
            p.sync();
        }
    }

    /// The position writer, started on first use; None for a memory stream.
    fn positions(&self) -> Option<&Positions> {
        let dir = self.dir.as_ref()?;
        let fsync = self.storage == StorageMode::Fsync;
        Some(
            self.positions
                .get_or_init(|| Positions::start(dir.join("consumers"), fsync)),
        )
    }

    /// Test hook: while `hold` is set no consumer position is written (they stay queued).
    #[doc(hidden)]
    pub fn hold_positions(&self, hold: bool) {
        if let Some(p) = self.positions() {
            p.hold(hold);
        }
    }

    fn storage_err(&self, source: fogline_log::LogError) -> BrokerError {
        BrokerError::Storage {
            stream: self.name.clone(),
            source,
        }
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

/// A stream's own limit, else the broker's; `memory` streams are further
/// capped by `memory_retention_bytes`, since RAM is scarcer than disk.
fn retention_bytes(cfg: &StreamConfig, broker: &BrokerConfig, storage: StorageMode) -> Option<u64> {
    let own = cfg.retention_bytes.map(|b| b.as_u64());
    let default = broker.retention_bytes.map(|b| b.as_u64());
    match (own, storage) {
        (Some(b), _) => Some(b),
        (None, StorageMode::Memory) => {
            let cap = broker.memory_retention_bytes.as_u64();
            Some(default.map_or(cap, |d| d.min(cap)))
        }
        (None, _) => default,
    }
}

/// The log's per-record bound: payload limit plus room for topic and headers.
fn record_limit(broker: &BrokerConfig) -> u32 {
    let payload = broker
        .max_message_bytes
        .as_u64()
        .min(u64::from(u32::MAX) / 2);
    (payload + 128 * 1024) as u32
}

fn load_floors(dir: &Path) -> Result<HashMap<String, u64>, BrokerError> {
    let mut floors = HashMap::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(floors),
        Err(e) => return Err(BrokerError::io(format!("reading {}", dir.display()), e)),
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        match std::fs::read_to_string(entry.path()).map(|s| s.trim().parse::<u64>()) {
            Ok(Ok(floor)) => {
                floors.insert(name, floor);
            }
            _ => {
                tracing::warn!(path = %entry.path().display(), "ignoring unreadable consumer position")
            }
        }
    }
    Ok(floors)
}
