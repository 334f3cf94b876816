//! The log: a list of segments, the last one active.

use crate::buf::MapBuf;
use crate::format::{encoded_len, RECORD_HEADER};
use crate::prepare::{NextSegment, NEXT_FILE};
use crate::recovery::{open_dir, OpenParams, RecoveryReport};
use crate::remover::Remover;
use crate::segment::{create_fitting, install, Backing, Limits, Segment, Spare, SyncJob};
use crate::{LogError, LogOptions, Record, Storage};
use serde::Serialize;
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

/// A segmented, append-only record log. See the crate documentation for the format.
///
/// Single writer (`&mut self`); reads take `&self`. The broker wraps it in a mutex.
#[derive(Debug)]
pub struct Log {
    opts: LogOptions,
    segment_bytes: usize,
    /// Never empty; the last one is active.
    segments: Vec<Segment>,
    /// Data bytes of all segments.
    total_bytes: u64,
    last_ts: u64,
    /// File storage: removes the files of dropped segments off the writer's thread. Declared
    /// before `_lock`, so it is dropped (and finishes) first.
    remover: Option<Remover>,
    /// Holds the directory's `flock` (file storage) for the log's lifetime.
    _lock: Option<std::fs::File>,
    /// Memory storage: the mapping of the last segment retention dropped, for the next one.
    spare: Option<Spare>,
    /// Retention keeps every segment holding an offset at or after this ([`Log::set_retention_floor`]).
    floor: Option<u64>,
    /// Bytes the last retention pass kept only because of `floor`.
    held_bytes: u64,
    /// File storage: the next segment's file, made ahead (see `prepare`).
    next: Option<NextSegment>,
    /// Its directory is going away ([`Log::retire`]): no file is touched by name any more.
    retired: bool,
    #[cfg(test)]
    reused: u64,
    #[cfg(test)]
    prepared_used: u64,
}

impl Drop for Log {
    /// Removes the next segment's file made ahead, if any (an open would remove it).
    fn drop(&mut self) {
        if let Some(next) = self.next.take() {
            next.discard();
        }
    }
}

/// Counters describing a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct LogStats {
    /// Records held (appended, including not yet committed ones).
    pub records: u64,
    /// Bytes of encoded records held.
    pub bytes: u64,
    /// Segments, including the active one.
    pub segments: usize,
    /// Offset of the oldest record held (== `next_offset` when empty).
    pub first_offset: u64,
    /// Offset the next append gets.
    pub next_offset: u64,
    /// Timestamp of the oldest record held.
    pub first_timestamp: Option<u64>,
    /// Timestamp of the newest record.
    pub last_timestamp: Option<u64>,
}

/// What one retention pass removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct RetentionReport {
    /// Segments deleted.
    pub segments_removed: usize,
    /// Records deleted.
    pub records_removed: u64,
    /// Bytes deleted.
    pub bytes_removed: u64,
    /// The log's first offset afterwards.
    pub first_offset: u64,
    /// Bytes retention would have dropped but kept for the retention floor.
    pub held_bytes: u64,
}

impl fmt::Display for RetentionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "removed {} segments ({} records, {} bytes); first offset now {}",
            self.segments_removed, self.records_removed, self.bytes_removed, self.first_offset
        )
    }
}

/// Microseconds since the UNIX epoch by the system clock.
pub fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

impl Log {
    /// Opens (or creates) a log. With file storage this recovers the directory: torn or
    /// corrupt tails are cut, stale indexes rebuilt, and all of it reported; corrupt data never
    /// makes it fail.
    ///
    /// # Errors
    /// `NoDirectory` when file storage has no `dir`; `Locked` when another log has the
    /// directory open; `Io` when the directory or a file cannot be created, opened, mapped or
    /// resized (including a full disk: segments reserve their blocks).
    ///
    /// # Example
    /// ```
    /// use fogline_log::{Log, LogOptions};
    /// let (mut log, _report) = Log::open(LogOptions::default())?;
    /// let off = log.append(1, b"site/a", b"", b"hello")?;
    /// log.commit()?;
    /// assert_eq!(&log.read(off, 10, 1 << 20)?[0].payload[..], b"hello");
    /// # Ok::<(), fogline_log::LogError>(())
    /// ```
    pub fn open(opts: LogOptions) -> Result<(Log, RecoveryReport), LogError> {
        let segment_bytes = opts.segment_bytes.clamp(64, u64::from(u32::MAX)) as usize;
        let (segments, report, lock) = match (opts.storage, &opts.dir) {
            (Storage::Memory, _) => {
                let buf = MapBuf::anon(segment_bytes).map_err(LogError::io("mmap", "(memory)"))?;
                let seg = Segment::new(0, buf, segment_bytes, memory_backing());
                (vec![seg], RecoveryReport::default(), None)
            }
            (storage, None) => return Err(LogError::NoDirectory(storage)),
            (storage, Some(dir)) => {
                let (segments, report, lock) = open_dir(&OpenParams {
                    dir,
                    segment_bytes,
                    fsync: storage == Storage::Fsync,
                })?;
                (segments, report, Some(lock))
            }
        };
        let total_bytes = segments.iter().map(|s| s.write_pos as u64).sum();
        let last_ts = segments
            .iter()
            .rev()
            .find(|s| s.count > 0)
            .map_or(0, |s| s.last_ts);
        let log = Log {
            opts,
            segment_bytes,
            segments,
            total_bytes,
            last_ts,
            remover: None,
            _lock: lock,
            spare: None,
            floor: None,
            held_bytes: 0,
            next: None,
            retired: false,
            #[cfg(test)]
            reused: 0,
            #[cfg(test)]
            prepared_used: 0,
        };
        Ok((log, report))
    }

    /// The options the log was opened with.
    pub fn options(&self) -> &LogOptions {
        &self.opts
    }

    fn active(&mut self) -> &mut Segment {
        let last = self.segments.len() - 1;
        &mut self.segments[last]
    }

    /// Appends a record and returns its offset. It is readable after the next [`commit`].
    /// A timestamp older than the previous record's is raised to it, so timestamps never go
    /// backwards within a log.
    ///
    /// # Errors
    /// `EmptyTopic` for an empty topic (the log's mark for lost records);
    /// `RecordTooLarge` beyond `max_record_bytes`; `Io` when a new segment cannot be created.
    ///
    /// [`commit`]: Log::commit
    #[inline]
    pub fn append(
        &mut self,
        timestamp: u64,
        topic: &[u8],
        headers: &[u8],
        payload: &[u8],
    ) -> Result<u64, LogError> {
        if topic.is_empty() {
            return Err(LogError::EmptyTopic);
        }
        let size = encoded_len(topic.len(), headers.len(), payload.len())
            .filter(|&s| s as u64 <= u64::from(self.opts.max_record_bytes))
            .ok_or_else(|| LogError::RecordTooLarge {
                size: [topic.len(), headers.len(), payload.len(), RECORD_HEADER]
                    .iter()
                    .fold(0u64, |a, &b| a.saturating_add(b as u64)),
                max: self.opts.max_record_bytes,
            })?;
        if !self.active().fits(size) {
            self.roll(size)?;
        }
        let ts = timestamp.max(self.last_ts);
        self.last_ts = ts;
        self.total_bytes += size as u64;
        let seg = self.active();
        let offset = seg.next_offset();
        seg.append(size, ts, topic, headers, payload);
        Ok(offset)
    }

    /// Makes room for `bytes` more bytes of records in the active segment (see
    /// [`records_len`](crate::records_len)), rolling to a new one now if they do not fit.
    /// A batch reserved first is appended all or nothing: none of its appends rolls, and a
    /// roll in the middle of it could fail after sealing (and so making readable) the
    /// records before it, which its publisher, refused, would send again.
    ///
    /// # Errors
    /// As [`append`](Log::append) when it rolls: the new segment cannot be created, or
    /// sealing the old one failed.
    pub fn reserve(&mut self, bytes: usize) -> Result<(), LogError> {
        if !self.active().fits(bytes) {
            self.roll(bytes)?;
        }
        Ok(())
    }

    /// Starts a new active segment with room for a `size`-byte record.
    #[cold]
    fn roll(&mut self, size: usize) -> Result<(), LogError> {
        self.roll_with(size, false)
    }

    /// [`roll`](Log::roll); `seal_now`: the old segment's file work is done before the new
    /// segment is created (a purge: its unused tail is given back to the disk first).
    fn roll_with(&mut self, size: usize, seal_now: bool) -> Result<(), LogError> {
        let cap = self.segment_bytes.max(size);
        let retired = self.retired;
        let active = self.active();
        let base = active.next_offset();
        let reuse = active.count == 0;
        if !reuse {
            // The seal's file work runs beside the new segment's creation.
            match active.seal()? {
                // Its directory is going away: no index is written into it.
                Some(_) if retired => {}
                Some(files) if seal_now => files.run()?,
                Some(files) => self.housekeeper().seal(files),
                None => {}
            }
        }
        // An empty active segment is replaced, not sealed (sealed segments are never empty):
        // its successor is created first (a new file renamed over it), so a failure leaves
        // it in place and a crash cannot leave a directory without the segment that carries
        // the next offset.
        // A retired log's directory is going away: it goes on in memory.
        let dir = self.opts.dir.clone().filter(|_| !retired);
        let seg = match (&self.opts.storage, &dir) {
            (Storage::Memory, _) | (_, None) => match self.spare.take() {
                Some(spare) if spare.len() == cap => {
                    #[cfg(test)]
                    {
                        self.reused += 1;
                    }
                    Segment::reuse(base, spare, cap, memory_backing())
                }
                _ => {
                    let buf = MapBuf::anon(cap).map_err(LogError::io("mmap", "(memory)"))?;
                    Segment::new(base, buf, cap, memory_backing())
                }
            },
            (storage, Some(dir)) => {
                let fsync = *storage == Storage::Fsync;
                match self.take_prepared(cap) {
                    Some((file, buf)) => {
                        install(dir, base, &dir.join(NEXT_FILE), file, buf, cap, fsync)?
                    }
                    None => create_fitting(dir, base, cap, size, fsync)?,
                }
            }
        };
        if reuse {
            self.segments.pop();
        }
        self.segments.push(seg);
        if !reuse {
            self.drop_behind();
            self.enforce_retention(now_micros());
        }
        Ok(())
    }

    /// After a roll: drops the pages of the segment sealed the roll before, which has had a
    /// segment's time to be written back (see [`cache`](crate::cache)).
    fn drop_behind(&mut self) {
        if self.retired {
            return;
        }
        if let [.., older, _, _] = &self.segments[..] {
            if let Some(pages) = older.sealed_pages() {
                self.housekeeper().drop_pages(pages);
            }
        }
    }

    /// The log's housekeeping thread, started on first use (none with `inline_housekeeping`:
    /// the jobs then run as they are queued).
    fn housekeeper(&mut self) -> &Remover {
        let inline = self.opts.inline_housekeeping;
        self.remover.get_or_insert_with(|| match inline {
            true => Remover::default(),
            false => Remover::start(),
        })
    }

    /// Makes everything appended so far readable; with `fsync` storage, first flushes it to
    /// stable storage (msync of the dirty range). Call once per batch before acknowledging.
    ///
    /// # Errors
    /// `Io` when the flush fails; the records then stay invisible.
    pub fn commit(&mut self) -> Result<(), LogError> {
        self.active().commit()?;
        self.prepare_ahead();
        Ok(())
    }

    /// The next segment's file made ahead (at [`NEXT_FILE`]), if there is one of at least
    /// `cap` bytes (see `prepare`): the file and its mapping.
    fn take_prepared(&mut self, cap: usize) -> Option<(std::fs::File, MapBuf)> {
        let (file, buf) = match self.next.take()?.try_take(cap) {
            Ok(made) => made?,
            // Not made yet: the roll makes its own file rather than wait behind the
            // housekeeping; the one being made is removed after its job.
            Err(pending) => {
                self.housekeeper().discard(pending);
                return None;
            }
        };
        #[cfg(test)]
        {
            self.prepared_used += 1;
        }
        Some((file, buf))
    }

    /// File storage: once the active segment is three quarters full, has the housekeeping
    /// thread make the next segment's file (see `prepare`). Runs with every commit.
    fn prepare_ahead(&mut self) {
        let seg = &self.segments[self.segments.len() - 1];
        if self.next.is_some() || self.retired || seg.write_pos < seg.cap() - seg.cap() / 4 {
            return;
        }
        let (Some(dir), false) = (&self.opts.dir, self.opts.storage == Storage::Memory) else {
            return;
        };
        let (next, job) =
            NextSegment::start(dir, self.segment_bytes, self.opts.storage == Storage::Fsync);
        self.next = Some(next);
        self.housekeeper().prepare(job);
    }

    /// With `fsync` storage, the flush that makes everything appended so far durable, to run
    /// on another thread while appends go on (group commit): run it, then pass it to
    /// [`finish_sync`](Log::finish_sync). None with nothing to flush, or with other storage
    /// (use [`commit`](Log::commit)).
    pub fn sync_job(&self) -> Option<SyncJob> {
        self.segments[self.segments.len() - 1].sync_job()
    }

    /// Makes the records a successful [`SyncJob`] flushed visible.
    pub fn finish_sync(&mut self, job: &SyncJob) {
        self.active().finish_sync(job);
        self.prepare_ahead();
    }

    /// Committed records from offset `from` (raised to `first_offset()`), at most `max_records`
    /// and `max_bytes` of encoded records, but at least one if any is available. The returned
    /// `Bytes` share the log's memory and stay valid after the log drops the segment.
    ///
    /// Records before an offset that holds none (damaged, or lost to damage earlier) are
    /// returned; if the first offset to return holds none, the call fails and says where
    /// reading can go on ([`LogError::resume`]).
    ///
    /// # Errors
    /// `Corrupt` when that first record is damaged, `Lost` when recovery dropped it or its
    /// segment is missing.
    pub fn read(
        &self,
        from: u64,
        max_records: usize,
        max_bytes: usize,
    ) -> Result<Vec<Record>, LogError> {
        let mut out = Vec::new();
        self.read_into(from, max_records, max_bytes, &mut out)?;
        Ok(out)
    }

    /// [`read`](Log::read) appending to a caller's vector (to reuse its allocation).
    ///
    /// # Errors
    /// As [`read`](Log::read).
    pub fn read_into(
        &self,
        from: u64,
        max_records: usize,
        max_bytes: usize,
        out: &mut Vec<Record>,
    ) -> Result<(), LogError> {
        let from = from.max(self.first_offset());
        let i = self.segments.partition_point(|s| s.base <= from).max(1) - 1;
        let mut limits = Limits {
            records: max_records,
            bytes: max_bytes,
            taken: 0,
        };
        let mut prev_end = None;
        for seg in &self.segments[i..] {
            // Offsets between two segments belong to a segment that is missing (deleted
            // behind the log's back): a reader asking for one is told.
            if let Some(end) = prev_end.filter(|&e| e < seg.base && from < seg.base) {
                if limits.taken > 0 {
                    break;
                }
                return Err(LogError::Lost {
                    offset: from.max(end),
                    first: end,
                    resume: seg.base,
                });
            }
            if !seg.read_into(from, &mut limits, out)? {
                break;
            }
            prev_end = Some(seg.next_offset());
        }
        Ok(())
    }

    /// The first offset whose timestamp is >= `timestamp`, or `next_offset()` if none.
    /// When damage in the segment that holds it hides the answer, that segment's first
    /// offset: a reader starting there gets every intact record from the time on (and some
    /// before it) rather than none of the later segments.
    pub fn offset_for_time(&self, timestamp: u64) -> u64 {
        // Sealed segments are never empty, so only an empty active (last) segment is skipped.
        let i = self
            .segments
            .partition_point(|s| s.count > 0 && s.last_ts < timestamp);
        match self
            .segments
            .get(i)
            .map(|s| (s.base, s.offset_for_time(timestamp)))
        {
            Some((_, Ok(Some(offset)))) => offset,
            Some((base, Err(_))) => base,
            Some((_, Ok(None))) | None => self.next_offset(),
        }
    }

    /// Offset of the oldest record held.
    pub fn first_offset(&self) -> u64 {
        self.segments[0].base
    }

    /// Offset the next append gets.
    pub fn next_offset(&self) -> u64 {
        self.segments[self.segments.len() - 1].next_offset()
    }

    /// One past the last committed (readable) offset.
    pub fn committed_offset(&self) -> u64 {
        let last = &self.segments[self.segments.len() - 1];
        last.base + last.visible_count
    }

    /// Drops whole oldest segments while the log exceeds `retention_bytes`, or while the
    /// oldest segment's newest record is older than `now_us - retention_age`. Never drops the
    /// active segment, nor a segment holding an offset at or after the retention floor
    /// ([`set_retention_floor`]); the bytes kept for the floor are reported
    /// ([`held_bytes`]). Called by `append` whenever a segment fills. The files of dropped
    /// segments are deleted on a thread of the log's own: [`wait_for_removals`] waits for
    /// them, [`take_removal_errors`] reports the deletions that failed. Records read before
    /// stay valid either way.
    ///
    /// [`set_retention_floor`]: Log::set_retention_floor
    /// [`held_bytes`]: Log::held_bytes
    /// [`wait_for_removals`]: Log::wait_for_removals
    /// [`take_removal_errors`]: Log::take_removal_errors
    pub fn enforce_retention(&mut self, now_us: u64) -> RetentionReport {
        let mut r = RetentionReport::default();
        let max_age = self.opts.retention_age.map(|a| a.as_micros() as u64);
        // Walk the segments retention wants gone as if none were held: those before the
        // first held one go, the rest of them are kept and counted (segments hold rising
        // offsets, so once one is held every later one is).
        let (mut droppable, mut held, mut total) = (0, 0, self.total_bytes);
        for seg in &self.segments[..self.segments.len() - 1] {
            let too_big = self.opts.retention_bytes.is_some_and(|m| total > m);
            let too_old = max_age.is_some_and(|a| seg.last_ts < now_us.saturating_sub(a));
            if !(too_big || too_old) {
                break;
            }
            if held == 0 && self.floor.is_none_or(|f| seg.next_offset() <= f) {
                droppable += 1;
            } else {
                held += seg.write_pos as u64;
            }
            total -= seg.write_pos as u64;
        }
        for _ in 0..droppable {
            self.drop_oldest(&mut r);
        }
        self.held_bytes = held;
        r.held_bytes = held;
        r.first_offset = self.first_offset();
        r
    }

    /// Sets the retention floor: retention keeps every record at or after `floor` (`None`:
    /// none is kept for it), so a reader that has not yet taken them (a bridge during an
    /// outage) loses none. The log may then grow past its limits; [`held_bytes`] says by how
    /// much, and bounding it is the caller's (the broker refuses appends past a margin).
    /// Applied by the next [`enforce_retention`]. [`purge`] ignores it.
    ///
    /// [`held_bytes`]: Log::held_bytes
    /// [`enforce_retention`]: Log::enforce_retention
    /// [`purge`]: Log::purge
    pub fn set_retention_floor(&mut self, floor: Option<u64>) {
        self.floor = floor;
    }

    /// The retention floor in force.
    pub fn retention_floor(&self) -> Option<u64> {
        self.floor
    }

    /// Bytes the last retention pass would have dropped but kept for the retention floor
    /// (whole segments; the active one is never counted).
    pub fn held_bytes(&self) -> u64 {
        self.held_bytes
    }

    /// Drops the oldest segment (never the active one): its files go on the remover's
    /// thread, a memory segment's mapping is kept for reuse.
    fn drop_oldest(&mut self, r: &mut RetentionReport) {
        let seg = self.segments.remove(0);
        self.total_bytes -= seg.write_pos as u64;
        r.segments_removed += 1;
        r.records_removed += seg.count - seg.lost;
        r.bytes_removed += seg.write_pos as u64;
        if self.retired {
            // Its directory is going away with its files.
        } else if seg.log_file().is_some() {
            self.housekeeper().remove(seg);
        } else if self.spare.is_none() {
            self.spare = seg.into_spare();
        }
    }

    /// Changes the retention limits (applied by the next [`enforce_retention`]).
    ///
    /// [`enforce_retention`]: Log::enforce_retention
    pub fn set_retention(&mut self, bytes: Option<u64>, age: Option<std::time::Duration>) {
        self.opts.retention_bytes = bytes;
        self.opts.retention_age = age;
    }

    /// Drops every record: the active segment is sealed and a new, empty one starts at
    /// `next_offset()` (offsets are never reused), then every older segment is dropped and,
    /// with file storage, its files deleted before this returns. A crash before it returns
    /// may leave some of the records (the new segment is in place first, so nothing that
    /// came after them is lost); one after it finds none of them.
    ///
    /// # Errors
    /// `Io` when the new segment cannot be created (nothing is dropped), or when a dropped
    /// segment's files could not be deleted (they come back on the next open).
    pub fn purge(&mut self) -> Result<RetentionReport, LogError> {
        if self.active().count > 0 {
            self.roll_with(0, true)?;
        }
        let mut r = RetentionReport::default();
        while self.segments.len() > 1 {
            self.drop_oldest(&mut r);
        }
        self.held_bytes = 0;
        r.first_offset = self.first_offset();
        self.wait_for_removals();
        if let Some(e) = self.take_removal_errors().into_iter().next() {
            return Err(e);
        }
        Ok(r)
    }

    /// The log's directory is about to go (its stream is deleted, and a stream of the same
    /// name may be made there again): the file made ahead is removed, the housekeeping
    /// queued so far is finished, and from now on the log touches no file by name. What is
    /// still appended is kept in memory segments; a seal writes no index, retention
    /// removes no file.
    pub fn retire(&mut self) {
        if let Some(next) = self.next.take() {
            next.discard();
        }
        self.wait_for_removals();
        self.retired = true;
    }

    /// Returns once the log's housekeeping queued so far is done: the files of every segment
    /// retention dropped are deleted (see [`enforce_retention`](Log::enforce_retention)),
    /// every sealed segment's file is cut and its index written, and drop-behind's page-cache
    /// work is done.
    pub fn wait_for_removals(&self) {
        if let Some(r) = &self.remover {
            r.wait();
        }
    }

    /// Housekeeping that failed since the last call: deletions of dropped segments' files (the
    /// files stay, and the next open finds those segments again) and seals' file work (the
    /// next open scans that segment and finishes it; its records were committed before).
    pub fn take_removal_errors(&mut self) -> Vec<LogError> {
        self.remover
            .as_ref()
            .map_or_else(Vec::new, Remover::take_errors)
    }

    /// True once a flush of a segment still held failed: what was appended before it is not
    /// known durable (the log takes appends still, but an `fsync` stream must not acknowledge
    /// them). A full disk alone never sets it.
    pub fn flush_failed(&self) -> bool {
        self.segments.iter().any(Segment::flush_failed)
    }

    /// Counters: records, bytes, segments, offsets and timestamps.
    pub fn stats(&self) -> LogStats {
        let with_data = || self.segments.iter().filter(|s| s.count > 0);
        LogStats {
            records: self.segments.iter().map(|s| s.count - s.lost).sum(),
            bytes: self.total_bytes,
            segments: self.segments.len(),
            first_offset: self.first_offset(),
            next_offset: self.next_offset(),
            first_timestamp: with_data().next().map(|s| s.first_ts),
            last_timestamp: with_data().next_back().map(|s| s.last_ts),
        }
    }
}

fn memory_backing() -> Backing {
    Backing {
        dir: None,
        file: None,
        fsync: false,
        dir_unsynced: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Memory segments dropped by retention are reused; records written over the stale bytes
    /// of a reused mapping read back exactly, and reads never see stale data.
    #[test]
    fn memory_segments_are_reused_without_stale_bytes() {
        let opts = LogOptions {
            storage: Storage::Memory,
            segment_bytes: 8192,
            retention_bytes: Some(16_384),
            ..LogOptions::default()
        };
        let (mut log, _) = Log::open(opts).unwrap();
        let payload = |i: u64| -> Vec<u8> {
            let n = (i * 37 % 700) as usize + 1;
            (0..n).map(|k| (k as u64 ^ i) as u8).collect()
        };
        for i in 0..3000u64 {
            let off = log.append(i + 1, b"t", b"h", &payload(i)).unwrap();
            assert_eq!(off, i);
            log.commit().unwrap();
            if i % 97 == 0 {
                let first = log.first_offset();
                for r in log.read(first, usize::MAX, usize::MAX).unwrap() {
                    assert_eq!(
                        &r.payload[..],
                        &payload(r.offset)[..],
                        "offset {}",
                        r.offset
                    );
                    assert_eq!(&r.headers[..], b"h");
                }
            }
        }
        assert!(log.reused > 10, "segments reused {} times", log.reused);
    }

    /// With file storage the next segment's file is made ahead once the active one is three
    /// quarters full, and the rolls take it: every record reads back, after a reopen too,
    /// and no prepared file is left behind.
    #[test]
    fn rolls_take_the_segment_made_ahead() {
        for storage in [Storage::Mmap, Storage::Fsync] {
            let dir = tempfile::tempdir().unwrap();
            let opts = LogOptions {
                storage,
                dir: Some(dir.path().to_path_buf()),
                segment_bytes: 64 << 10,
                ..LogOptions::default()
            };
            let next = dir.path().join(crate::prepare::NEXT_FILE);
            let (mut log, _) = Log::open(opts.clone()).unwrap();
            let payload = |i: u64| vec![i as u8; 900];
            let mut made_ahead = false;
            for i in 0..400u64 {
                log.append(i, b"t", b"", &payload(i)).unwrap();
                log.commit().unwrap();
                if log.next.is_some() {
                    log.wait_for_removals();
                    made_ahead |= next.exists();
                }
            }
            assert!(made_ahead, "{storage}: no file was made ahead");
            let segments = log.stats().segments;
            assert!(segments >= 5, "{storage}: {segments} segments");
            // Every roll but the first few (before a commit reached three quarters) used one.
            assert_eq!(log.prepared_used as usize, segments - 1, "{storage}");
            let check = |log: &Log| {
                let got = log.read(0, usize::MAX, usize::MAX).unwrap();
                assert_eq!(got.len(), 400, "{storage}");
                for r in got {
                    assert_eq!(&r.payload[..], &payload(r.offset)[..], "{storage}");
                }
            };
            check(&log);
            drop(log);
            assert!(
                !next.exists(),
                "{storage}: the file made ahead was left behind"
            );
            let (log, report) = Log::open(opts.clone()).unwrap();
            assert!(report.is_clean(), "{storage}: {report}");
            check(&log);
            drop(log);
            // As a kill leaves it: removed quietly, no repair reported, verify content.
            std::fs::write(&next, b"left by a kill").unwrap();
            let v = crate::verify(dir.path(), false).unwrap();
            assert!(v.is_ok(), "{storage}: {v}");
            let (log, report) = Log::open(opts).unwrap();
            assert!(report.is_clean(), "{storage}: {report}");
            assert!(!next.exists());
            check(&log);
        }
    }

    /// A retired log leaves its directory alone: the file made ahead is removed at once,
    /// and what is appended after (rolls included) stays in memory, so a log made again in
    /// a directory of the same name is not touched, before or after the old one is dropped.
    #[test]
    fn a_retired_log_touches_no_file() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("s");
        let opts = LogOptions {
            storage: Storage::Mmap,
            dir: Some(dir.clone()),
            segment_bytes: 64 << 10,
            ..LogOptions::default()
        };
        let (mut old, _) = Log::open(opts.clone()).unwrap();
        for i in 0..55u64 {
            old.append(i, b"t", b"", &[1u8; 1000]).unwrap();
            old.commit().unwrap();
        }
        old.wait_for_removals();
        assert!(dir.join(crate::prepare::NEXT_FILE).exists());
        old.retire();
        assert!(!dir.join(crate::prepare::NEXT_FILE).exists());
        // The stream is deleted (its directory moved away) and made again.
        std::fs::rename(&dir, base.path().join("trash")).unwrap();
        let (mut new, _) = Log::open(opts).unwrap();
        for i in 0..55u64 {
            new.append(i, b"n", b"", &[2u8; 1000]).unwrap();
            new.commit().unwrap();
        }
        new.wait_for_removals();
        let listing = |d: &std::path::Path| {
            let mut names: Vec<String> = std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            names.sort();
            names
        };
        let before = listing(&dir);
        // The old log goes on: rolls, retention, then it is dropped.
        for i in 55..300u64 {
            old.append(i, b"t", b"", &[1u8; 1000]).unwrap();
            old.commit().unwrap();
        }
        assert!(old.stats().segments >= 4);
        old.set_retention(Some(100 << 10), None);
        old.enforce_retention(now_micros());
        assert_eq!(
            old.read(old.first_offset(), 1, usize::MAX).unwrap().len(),
            1
        );
        drop(old);
        assert_eq!(listing(&dir), before);
        // The new one rolls on the file it made ahead.
        for i in 55..120u64 {
            new.append(i, b"n", b"", &[2u8; 1000]).unwrap();
            new.commit().unwrap();
        }
        assert_eq!(new.read(0, usize::MAX, usize::MAX).unwrap().len(), 120);
    }

    /// A record larger than the file made ahead rolls to a file of its own; the one made
    /// ahead is removed, and the log goes on.
    #[test]
    fn a_record_larger_than_the_file_made_ahead_gets_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let opts = LogOptions {
            storage: Storage::Mmap,
            dir: Some(dir.path().to_path_buf()),
            segment_bytes: 64 << 10,
            ..LogOptions::default()
        };
        let next = dir.path().join(crate::prepare::NEXT_FILE);
        let (mut log, _) = Log::open(opts).unwrap();
        for i in 0..55u64 {
            log.append(i, b"t", b"", &[1u8; 1000]).unwrap();
            log.commit().unwrap();
        }
        assert!(log.next.is_some());
        log.wait_for_removals();
        assert!(next.exists());
        let big = vec![2u8; 100 << 10];
        let off = log.append(55, b"t", b"", &big).unwrap();
        // Removed by the roll (the commit below may make one ahead again).
        assert!(!next.exists());
        log.commit().unwrap();
        assert_eq!(log.prepared_used, 0);
        assert_eq!(
            &log.read(off, 1, usize::MAX).unwrap()[0].payload[..],
            &big[..]
        );
        log.append(56, b"t", b"", b"after").unwrap();
        log.commit().unwrap();
        assert_eq!(log.read(0, usize::MAX, usize::MAX).unwrap().len(), 57);
    }

    /// A purge drops every record, keeps the offsets going, and leaves the log usable.
    #[test]
    fn purge_keeps_offsets_and_drops_every_record() {
        for storage in [Storage::Memory, Storage::Mmap] {
            let dir = tempfile::tempdir().unwrap();
            let opts = LogOptions {
                storage,
                dir: Some(dir.path().to_path_buf()),
                segment_bytes: 4096,
                ..LogOptions::default()
            };
            let (mut log, _) = Log::open(opts.clone()).unwrap();
            for i in 0..100u64 {
                log.append(i + 1, b"t", b"", &[7u8; 100]).unwrap();
            }
            log.commit().unwrap();
            assert!(log.stats().segments > 1);
            let r = log.purge().unwrap();
            assert_eq!(r.records_removed, 100, "{storage}");
            assert_eq!(log.first_offset(), 100);
            assert_eq!(log.next_offset(), 100);
            assert_eq!(log.stats().records, 0);
            assert!(log.read(0, 10, 1 << 20).unwrap().is_empty());
            assert_eq!(log.append(200, b"t", b"", b"after").unwrap(), 100);
            log.commit().unwrap();
            assert_eq!(&log.read(0, 10, 1 << 20).unwrap()[0].payload[..], b"after");
            // An empty log purges to itself.
            drop(log);
            if storage == Storage::Mmap {
                let (mut log, _) = Log::open(opts).unwrap();
                assert_eq!((log.first_offset(), log.next_offset()), (100, 101));
                log.purge().unwrap();
                assert_eq!((log.first_offset(), log.next_offset()), (101, 101));
                drop(log);
                let names: Vec<_> = std::fs::read_dir(dir.path())
                    .unwrap()
                    .map(|e| e.unwrap().file_name().into_string().unwrap())
                    .filter(|n| n.ends_with(".log"))
                    .collect();
                assert_eq!(names.len(), 1, "{names:?}");
                let (log, _) = Log::open(LogOptions {
                    storage,
                    dir: Some(dir.path().to_path_buf()),
                    segment_bytes: 4096,
                    ..LogOptions::default()
                })
                .unwrap();
                assert_eq!((log.first_offset(), log.next_offset()), (101, 101));
            }
        }
    }

    /// New retention limits apply to the next pass.
    #[test]
    fn retention_can_change() {
        let opts = LogOptions {
            storage: Storage::Memory,
            segment_bytes: 4096,
            ..LogOptions::default()
        };
        let (mut log, _) = Log::open(opts).unwrap();
        for i in 0..200u64 {
            log.append(i + 1, b"t", b"", &[1u8; 100]).unwrap();
        }
        log.commit().unwrap();
        assert_eq!(log.enforce_retention(now_micros()).segments_removed, 0);
        log.set_retention(Some(8192), None);
        let r = log.enforce_retention(now_micros());
        assert!(r.segments_removed > 0);
        assert!(log.stats().bytes <= 8192 + 4096);
    }

    /// A mapping still read through a `Bytes` is not reused.
    #[test]
    fn a_segment_with_readers_is_not_reused() {
        let opts = LogOptions {
            storage: Storage::Memory,
            segment_bytes: 4096,
            retention_bytes: Some(1),
            ..LogOptions::default()
        };
        let (mut log, _) = Log::open(opts).unwrap();
        log.append(1, b"t", b"", &[1u8; 3000]).unwrap();
        log.commit().unwrap();
        let held = log.read(0, 1, usize::MAX).unwrap();
        log.append(2, b"t", b"", &[2u8; 3000]).unwrap();
        log.commit().unwrap();
        assert!(log.spare.is_none(), "the first segment is still read");
        assert!(held[0].payload.iter().all(|&b| b == 1));
    }
}
