//! A stream: a named log capturing the records whose topics match its subjects.
//!
//! On disk a file-backed stream is a directory `<data_dir>/<name>/` holding the
//! log's segments and `consumers/<consumer name>`, each a decimal offset: the
//! durable consumer's acknowledged floor (every record below it was acked), then, for a
//! consumer bound to a user, `owner USER` (see `durables`).
//! Positions are written to a temporary file and renamed, so a crash leaves
//! either the old or the new position (at-least-once, never a skipped record).
//!
//! A stream's subjects and retention may change while it runs ([`Stream::set_subjects`],
//! [`Stream::set_retention`]); its records may be dropped ([`Stream::purge`]); a deleted
//! stream is retired ([`Stream::retire`]): its consumers' reads fail and its position
//! writer stops before its directory goes. The group commit of `fsync` storage is in
//! `flush`, durable consumers' positions and the table of open consumers in `durables`,
//! readers' holds on retention in `hold`.

mod durables;
mod flush;
mod hold;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use fogline_log::{Log, LogOptions, LogStats, Record, RecoveryReport, RetentionReport};
use parking_lot::{Mutex, MutexGuard, RwLock};
use tokio::sync::Notify;

use crate::batch::Batch;
use crate::config::{valid_stream_name, BrokerConfig, StorageMode, StreamConfig};
use crate::error::BrokerError;
use crate::positions::Positions;
use crate::stats::Histogram;
use crate::tail::Tail;

pub use durables::ConsumerInfo;
pub(crate) use durables::ConsumerState;
use durables::{load_floors, Durables};
pub use hold::{HoldInfo, HolderInfo, RetentionHold};

/// One stream and its log.
pub struct Stream {
    name: String,
    /// What it was created with, as changed since (persisted in the node's catalog).
    config: Mutex<StreamConfig>,
    /// The topic filters it captures (read when a route is computed, not per publish).
    subjects: RwLock<Arc<[String]>>,
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
    /// How long those flushes took.
    flush_times: Histogram,
    /// Storage errors (appends, flushes, reads) since the stream was opened.
    storage_errors: AtomicU64,
    /// Set when the stream is deleted: reads fail, positions are not written.
    retired: AtomicBool,
    /// Set by a failed flush: the stream then takes no more records (see [`Stream::durable_until`]).
    broken: Mutex<Option<String>>,
    /// Set while appends fail for want of disk space; the next append that fits clears it.
    full: AtomicBool,
    /// Readers holding its retention (`hold`).
    retention_holds: Mutex<hold::Holds>,
    /// The broker's `retention_hold_max`.
    hold_cap: u64,
    /// Set while appends are refused because holders keep more than the hold margin.
    hold_full: AtomicBool,
    /// Records refused for that reason.
    hold_refused: AtomicU64,
    /// Test hook: the next flush fails ([`Stream::fail_next_flush`]).
    fail_next: AtomicBool,
    /// Test hook: flushes wait while it is true ([`Stream::hold_flushes`]).
    hold: tokio::sync::watch::Sender<bool>,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("name", &self.name)
            .field("storage", &self.storage)
            .field("subjects", &self.subjects())
            .finish_non_exhaustive()
    }
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
                "invalid stream name {:?}: use 1-64 of A-Z a-z 0-9 . _ -, not starting with '.', \
                 and not {}",
                cfg.name,
                crate::config::RESERVED_NAMES.join(" or ")
            )));
        }
        check_subjects(&cfg.name, &cfg.subjects).map_err(BrokerError::Config)?;
        let storage = cfg.storage.unwrap_or(broker.storage);
        let dir = (storage != StorageMode::Memory).then(|| broker.data_dir.join(&cfg.name));
        let opts = LogOptions {
            storage: storage.to_log(),
            dir: dir.clone(),
            segment_bytes: cfg.segment_bytes.unwrap_or(broker.segment_bytes).as_u64(),
            retention_bytes: retention_bytes(cfg, broker, storage),
            retention_age: retention_age(cfg, broker),
            max_record_bytes: record_limit(broker),
            // Its rolls must not wait for a sealed segment's file work.
            inline_housekeeping: false,
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
                config: Mutex::new(cfg.clone()),
                subjects: RwLock::new(cfg.subjects.clone().into()),
                storage,
                dir,
                log: Mutex::new(log),
                tail: Tail::new(next),
                durables: Mutex::new(Durables::new(floors)),
                positions: std::sync::OnceLock::new(),
                group_commit: storage == StorageMode::Fsync,
                syncing: AtomicBool::new(false),
                synced: Notify::new(),
                flushes: AtomicU64::new(0),
                flush_times: Histogram::default(),
                storage_errors: AtomicU64::new(0),
                retired: AtomicBool::new(false),
                broken: Mutex::new(None),
                full: AtomicBool::new(false),
                retention_holds: Mutex::new(hold::Holds::default()),
                hold_cap: broker.retention_hold_max.as_u64(),
                hold_full: AtomicBool::new(false),
                hold_refused: AtomicU64::new(0),
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
    pub fn subjects(&self) -> Arc<[String]> {
        self.subjects.read().clone()
    }

    /// Its settings as created or last changed (`None` fields take the broker's defaults).
    pub fn config(&self) -> StreamConfig {
        self.config.lock().clone()
    }

    /// Its storage mode.
    pub fn storage(&self) -> StorageMode {
        self.storage
    }

    /// True when a record on `topic` belongs in this stream.
    pub fn captures(&self, topic: &str) -> bool {
        self.subjects
            .read()
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
        self.check_hold(&log, u64::from(records.count()))?;
        let need = fogline_log::records_len(
            records.count() as usize,
            batch.topic.len(),
            records.content_len(),
        );
        if let Err(e) = log.reserve(need) {
            return Err(self.log_failed(e, &log));
        }
        if self.full.load(Relaxed) {
            self.full.store(false, Relaxed);
            tracing::info!(
                stream = self.name,
                "disk space is back: the stream takes records again"
            );
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
                return Err(self.log_failed(e, &log));
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
    fn log_failed(&self, e: fogline_log::LogError, log: &Log) -> BrokerError {
        if self.group_commit && log.flush_failed() {
            // A roll's flush failed, or took an error meant for a concurrent flush (Linux
            // reports a writeback error once): what was appended before is no longer known
            // durable. A roll that only found the disk full leaves that intact, and the
            // stream takes records again once there is room.
            *self.broken.lock() = Some(e.to_string());
        }
        if e.is_storage_full() && !self.full.swap(true, Relaxed) {
            tracing::warn!(
                stream = self.name,
                error = %e,
                "disk full: the stream refuses records until there is room (reads go on)"
            );
        }
        self.storage_err(e)
    }

    /// True while appends fail for want of disk space.
    pub fn storage_full(&self) -> bool {
        self.full.load(Relaxed)
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
        if self.is_retired() {
            return Err(BrokerError::UnknownStream(self.name.clone()));
        }
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

    /// How long the group-commit flushes took.
    pub fn flush_times(&self) -> &Histogram {
        &self.flush_times
    }

    /// Storage errors since the stream was opened.
    pub fn storage_errors(&self) -> u64 {
        self.storage_errors.load(Relaxed)
    }

    /// The retention in force: bytes and age, `None` for no limit.
    pub fn retention(&self) -> (Option<u64>, Option<Duration>) {
        let log = self.log.lock();
        let o = log.options();
        (o.retention_bytes, o.retention_age)
    }

    /// The size of a new segment.
    pub fn segment_bytes(&self) -> u64 {
        self.log.lock().options().segment_bytes
    }

    /// Its directory, for file storage.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Replaces the topic filters it captures. The broker's routes must be recomputed
    /// afterwards (see `Broker::update_stream`).
    ///
    /// # Errors
    /// [`BrokerError::Invalid`] for an empty list or a malformed filter.
    pub(crate) fn set_subjects(&self, subjects: Vec<String>) -> Result<(), BrokerError> {
        check_subjects(&self.name, &subjects).map_err(BrokerError::Invalid)?;
        let mut cfg = self.config.lock();
        *self.subjects.write() = subjects.clone().into();
        cfg.subjects = subjects;
        Ok(())
    }

    /// Changes its own retention (`None`: the broker's default, `Some(0)`: no limit); the
    /// next retention pass applies it.
    pub(crate) fn set_retention(
        &self,
        bytes: Option<bytesize::ByteSize>,
        age: Option<Duration>,
        broker: &BrokerConfig,
    ) {
        let mut cfg = self.config.lock();
        cfg.retention_bytes = bytes;
        cfg.retention_age = age;
        let limits = (
            retention_bytes(&cfg, broker, self.storage),
            retention_age(&cfg, broker),
        );
        self.log.lock().set_retention(limits.0, limits.1);
    }

    /// Drops every record; offsets go on where they were. Blocks on the disk (deletes the
    /// segment files).
    ///
    /// # Errors
    /// [`BrokerError::Storage`] when the log could not start a new segment or delete the old
    /// ones (see [`Log::purge`]).
    pub(crate) fn purge(&self) -> Result<RetentionReport, BrokerError> {
        let mut log = self.log.lock();
        let report = log.purge().map_err(|e| self.storage_err(e))?;
        let committed = log.committed_offset();
        drop(log);
        self.tail.set(committed);
        Ok(report)
    }

    /// Takes the stream out of service before it is deleted: reads (so its consumers) fail
    /// with `UnknownStream`, and its position writer stops, having finished any write under
    /// way, so nothing is written into its directory after this returns. Appends of
    /// publishes already routed to it still succeed, into a log that is going away. Blocks.
    pub(crate) fn retire(&self) {
        self.retired.store(true, Relaxed);
        if let Some(p) = self.positions.get() {
            p.retire();
        }
        // The log's housekeeping (a seal's index, a removal, the next segment's file)
        // works in its directory by path: finished before the directory goes, and nothing
        // more after it, so none lands in a stream made again under the same name.
        self.log.lock().retire();
    }

    /// True once the stream was deleted.
    pub fn is_retired(&self) -> bool {
        self.retired.load(Relaxed)
    }

    /// Drops segments past the retention limits; their files are deleted off this thread,
    /// and deletions that failed since the last call are logged.
    pub fn enforce_retention(&self, now_us: u64) {
        let mut log = self.log.lock();
        self.run_retention(&mut log, now_us);
        self.update_hold_full(&log);
    }

    fn run_retention(&self, log: &mut Log, now_us: u64) {
        log.enforce_retention(now_us);
        for e in log.take_removal_errors() {
            tracing::warn!(stream = %self.name, error = %e, "segment housekeeping failed: a file retention dropped is found again on the next start, a sealed segment without its cut or index is scanned then");
        }
    }

    fn storage_err(&self, source: fogline_log::LogError) -> BrokerError {
        self.storage_errors.fetch_add(1, Relaxed);
        BrokerError::Storage {
            stream: self.name.clone(),
            source,
        }
    }
}

/// Checks a subject list: at least one filter, each valid.
pub(crate) fn check_subjects(stream: &str, subjects: &[String]) -> Result<(), String> {
    if subjects.is_empty() {
        return Err(format!("stream {stream:?} has no subjects"));
    }
    for s in subjects {
        fogline_wire::validate_filter(s)
            .map_err(|e| format!("stream {stream:?} subject {s:?}: {e}"))?;
    }
    Ok(())
}

/// A stream's own limit, else the broker's (0 meaning none); `memory` streams are further
/// capped by `memory_retention_bytes`, since RAM is scarcer than disk, unless they set a
/// limit of their own (0 included).
fn retention_bytes(cfg: &StreamConfig, broker: &BrokerConfig, storage: StorageMode) -> Option<u64> {
    let own = cfg.retention_bytes.map(|b| b.as_u64());
    let default = broker
        .retention_bytes
        .map(|b| b.as_u64())
        .filter(|&b| b > 0);
    match (own, storage) {
        (Some(0), _) => None,
        (Some(b), _) => Some(b),
        (None, StorageMode::Memory) => {
            let cap = broker.memory_retention_bytes.as_u64();
            Some(default.map_or(cap, |d| d.min(cap)))
        }
        (None, _) => default,
    }
}

/// A stream's own age limit, else the broker's; zero means none.
fn retention_age(cfg: &StreamConfig, broker: &BrokerConfig) -> Option<Duration> {
    cfg.retention_age
        .or(broker.retention_age)
        .filter(|a| !a.is_zero())
}

/// The log's per-record bound: payload limit plus room for topic and headers.
fn record_limit(broker: &BrokerConfig) -> u32 {
    let payload = broker
        .max_message_bytes
        .as_u64()
        .min(u64::from(u32::MAX) / 2);
    (payload + 128 * 1024) as u32
}
