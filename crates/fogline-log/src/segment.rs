//! One segment: a mapping holding consecutive records, its sparse index, and its write cursor.
//!
//! Positions: `visible_pos <= write_pos <= cap`. `[0, visible_pos)` is committed and immutable
//! (readers may hold `Bytes` into it); `[visible_pos, write_pos)` is appended but not yet
//! committed; `[write_pos, cap)` is zero in a file segment (a reused memory mapping keeps stale
//! bytes there, which no read reaches). A sealed segment has `cap == write_pos ==
//! visible_pos`; its file is cut to `write_pos` by the seal's [`SealFiles`], soon after.

use crate::buf::{MapBuf, View};
use crate::cache::{start_writeback, SealedPages};
use crate::durability::{sync_dir, sync_file, sync_range};
use crate::format::{check_record, encode, parse_header, resync, Damage, Header};
use crate::index::{IndexFile, SparseIndex};
use crate::{LogError, Record};
use bytes::Bytes;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// `DIR/BASE.log` with the base zero-padded to 20 digits.
pub fn log_path(dir: &Path, base: u64) -> PathBuf {
    dir.join(format!("{base:020}.log"))
}

/// `DIR/BASE.idx`.
pub fn idx_path(dir: &Path, base: u64) -> PathBuf {
    dir.join(format!("{base:020}.idx"))
}

/// Writes `BASE.idx` atomically (temporary file + rename).
pub fn write_index(dir: &Path, f: &IndexFile, fsync: bool) -> Result<(), LogError> {
    let path = idx_path(dir, f.base);
    let tmp = path.with_extension("idx.tmp");
    let mut file = File::create(&tmp).map_err(LogError::io("create", &tmp))?;
    file.write_all(&f.encode())
        .map_err(LogError::io("write", &tmp))?;
    if fsync {
        sync_file(&file, &tmp)?;
    }
    fs::rename(&tmp, &path).map_err(LogError::io("rename", &path))?;
    if fsync {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Where a segment's bytes live.
#[derive(Debug)]
pub struct Backing {
    /// The segment's directory (file-backed storage only).
    pub dir: Option<PathBuf>,
    /// The open file while the segment is active.
    pub file: Option<File>,
    /// msync + fdatasync on commit.
    pub fsync: bool,
    /// `fsync` storage: the directory entry of this segment's file is not known durable yet
    /// (its directory's fsync failed after the file was renamed into place). The next flush
    /// syncs the directory before any record of the segment counts as durable.
    pub dir_unsynced: bool,
}

/// A segment of the log.
#[derive(Debug)]
pub struct Segment {
    pub base: u64,
    buf: Arc<MapBuf>,
    cap: usize,
    pub write_pos: usize,
    /// Offsets spanned: the next offset less the base.
    pub count: u64,
    /// Offsets its loss markers stand for (no record holds them).
    pub lost: u64,
    pub visible_pos: usize,
    pub visible_count: u64,
    synced_pos: usize,
    pub first_ts: u64,
    pub last_ts: u64,
    last_pos: usize,
    index: SparseIndex,
    backing: Backing,
    /// Set for sealed segments opened on their index without a scan.
    check_reads: bool,
    /// Shared with its [`SyncJob`]s (see `Fence`).
    fence: Arc<Fence>,
    /// `[.., populated)` is faulted in ahead of the writer.
    populated: usize,
    /// The kernel refused to populate (before Linux 5.14): pages fault one by one.
    populate_off: bool,
    /// A reused mapping is resident (and holds stale bytes) up to `dirty`: only what lies
    /// past it needs faulting in. Stale bytes are never read: every read stops at
    /// `write_pos`, and each append overwrites all of its record's bytes.
    dirty: usize,
    /// `mmap` storage: writeback of `[.., written_back)` has been started (see
    /// [`WRITEBACK_STEP`]).
    written_back: usize,
}

/// Serialises a segment's flushes (a [`SyncJob`] run elsewhere, the msync of a commit,
/// including the one a seal starts with; not the seal's later fsync, see [`SealFiles`]) and
/// remembers a failed one. The mapping and the segment's file share
/// one writeback-error cursor, and Linux reports a failed writeback once, to whichever
/// flush checks first, then counts those pages clean: a flush that ran beside or after the
/// failed one would succeed, and make records visible (and acknowledged) whose write had
/// failed. After a failure no flush of the segment succeeds.
#[derive(Debug, Default)]
pub(crate) struct Fence {
    /// Why the first failed flush failed.
    failed: Mutex<Option<String>>,
}

impl Fence {
    /// True once a flush failed.
    fn has_failed(&self) -> bool {
        self.failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// Runs `flush` unless a flush already failed; a failure is remembered.
    fn flush(
        &self,
        path: &Path,
        flush: impl FnOnce() -> Result<(), LogError>,
    ) -> Result<(), LogError> {
        let mut failed = self.failed.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(why) = failed.as_ref() {
            return Err(LogError::io("flush", path)(std::io::Error::other(format!(
                "an earlier flush of this segment failed ({why})"
            ))));
        }
        let result = flush();
        if let Err(e) = &result {
            *failed = Some(e.to_string());
        }
        result
    }
}

/// The file work that finishes a seal ([`Segment::seal`]), run off the appending thread.
pub struct SealFiles {
    dir: PathBuf,
    path: PathBuf,
    file: File,
    len: u64,
    fsync: bool,
    index: Option<IndexFile>,
}

impl SealFiles {
    /// Cuts the file to its data, syncs it (`fsync` storage), persists the index, and with
    /// `mmap` storage starts the writeback of its dirty pages (see [`cache`](crate::cache)).
    /// A failure costs only a scan on the next open: every record was committed before.
    pub fn run(self) -> Result<(), LogError> {
        let path = &self.path;
        self.file
            .set_len(self.len)
            .map_err(LogError::io("truncate", path))?;
        if self.fsync {
            // Outside the segment's fence: every record was flushed through it by the
            // seal's commit, so a failure here puts no acknowledged record in doubt and
            // must not mark the segment's flushes failed (which stops the stream).
            sync_file(&self.file, path)?;
        }
        if let Some(index) = &self.index {
            write_index(&self.dir, index, self.fsync)?;
        }
        if !self.fsync {
            start_writeback(&self.file, 0, 0);
        }
        Ok(())
    }
}

/// A flush of `[start, end)` of one segment's mapping, made by the log and run by anyone
/// (another thread), so one `msync` makes the records of many batches durable while the log
/// keeps taking appends: group commit. Records become visible only with
/// [`Log::finish_sync`](crate::Log::finish_sync).
#[derive(Debug)]
pub struct SyncJob {
    buf: Arc<MapBuf>,
    fence: Arc<Fence>,
    /// The directory to fsync first (see [`Backing::dir_unsynced`]).
    dir: Option<PathBuf>,
    path: PathBuf,
    base: u64,
    start: usize,
    end: usize,
    count: u64,
}

impl SyncJob {
    /// Flushes the range to stable storage (`msync(MS_SYNC)`).
    ///
    /// # Errors
    /// `Io` when the flush fails, or an earlier one of the segment did (see `Fence`): the
    /// records stay invisible, and no later flush of the segment makes them visible.
    pub fn run(&self) -> Result<(), LogError> {
        self.fence.flush(&self.path, || {
            if let Some(dir) = &self.dir {
                sync_dir(dir)?;
            }
            sync_range(&self.buf, &self.path, self.start, self.end)
        })
    }

    /// Test hook: the segment's flushes fail from now on, as after a failed writeback.
    #[doc(hidden)]
    pub fn inject_failure(&self) {
        let mut failed = self
            .fence
            .failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *failed = Some("injected failure".into());
    }

    /// The offset after the last record the job makes durable.
    pub fn end_offset(&self) -> u64 {
        self.base + self.count
    }
}

/// The mapping of a dropped memory segment, kept for the next one: reusing it spares the
/// page faults of a fresh mapping and the unmapping of the old one.
#[derive(Debug)]
pub struct Spare {
    buf: MapBuf,
    /// Bytes `[0, dirty)` may be non-zero.
    dirty: usize,
}

impl Spare {
    /// Mapped length.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
}

/// Bytes faulted in ahead of the writer at a time: one madvise instead of 256 page faults.
const POPULATE_STEP: usize = 1 << 20;
/// The first step of a segment: the step doubles with the data up to [`POPULATE_STEP`], so
/// the first record of a fresh segment waits for 4 pages, not 256.
pub const POPULATE_FIRST: usize = 16 << 10;

/// `mmap` storage: the active segment's writeback is started every this many bytes written
/// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`, which does not wait for it). Left to the
/// kernel, a segment's dirty pages pile up until its thresholds, and then the writer is
/// throttled in long stalls; written back as it goes, the stalls are short, the throughput
/// higher, and the pages clean by the time drop-behind releases them (`cache`).
/// `cargo run --release -p fogline-log --example roll_stall` shows the difference.
const WRITEBACK_STEP: usize = 8 << 20;

/// State recovered for an existing segment.
pub struct Recovered {
    pub base: u64,
    /// Offsets spanned.
    pub count: u64,
    /// Offsets loss markers stand for.
    pub lost: u64,
    pub end: usize,
    pub first_ts: u64,
    pub last_ts: u64,
    pub last_pos: usize,
    pub index: SparseIndex,
}

impl Segment {
    /// A new, empty segment over `buf`, writable up to `cap`.
    pub fn new(base: u64, buf: MapBuf, cap: usize, backing: Backing) -> Segment {
        Segment::recovered(
            Recovered {
                base,
                count: 0,
                lost: 0,
                end: 0,
                first_ts: 0,
                last_ts: 0,
                last_pos: 0,
                index: SparseIndex::with_capacity(cap),
            },
            buf,
            cap,
            backing,
        )
    }

    /// A segment whose first `r.end` bytes hold `r.count` valid records (all visible).
    pub fn recovered(r: Recovered, buf: MapBuf, cap: usize, backing: Backing) -> Segment {
        debug_assert!(r.end <= cap && cap <= buf.len());
        if backing.fsync && backing.file.is_some() {
            // Each commit msyncs the pages appended since the last one; in large folios it
            // would write up to 2 MiB for a 200-byte record (see `advise_single_pages`).
            buf.advise_single_pages(true);
        }
        let file_backed = backing.file.is_some();
        let mut seg = Segment {
            base: r.base,
            buf: Arc::new(buf),
            cap,
            write_pos: r.end,
            count: r.count,
            lost: r.lost,
            visible_pos: r.end,
            visible_count: r.count,
            synced_pos: r.end,
            first_ts: r.first_ts,
            last_ts: r.last_ts,
            last_pos: r.last_pos,
            index: r.index,
            backing,
            fence: Arc::default(),
            check_reads: false,
            populated: r.end,
            populate_off: false,
            dirty: 0,
            written_back: r.end - r.end % WRITEBACK_STEP,
        };
        if file_backed {
            // The first fault into a file's unwritten tail reads around itself: with the
            // default advice the kernel zero-fills a whole readahead window (8 MiB here,
            // ~2.8 ms). Taken here, when the segment is opened or created, not by the first
            // append after it.
            seg.populate_ahead(r.end);
        }
        seg
    }

    /// True once a flush of this segment failed: what it held is not known durable.
    pub fn flush_failed(&self) -> bool {
        self.fence.has_failed()
    }

    /// Verify the CRC of every record read (for segments not scanned at open).
    pub fn check_reads(mut self) -> Segment {
        self.check_reads = true;
        self
    }

    /// One past the last appended offset.
    pub fn next_offset(&self) -> u64 {
        self.base + self.count
    }

    /// Bytes it may hold.
    pub fn cap(&self) -> usize {
        self.cap
    }

    /// Whether `size` more bytes fit.
    #[inline]
    pub fn fits(&self, size: usize) -> bool {
        self.cap - self.write_pos >= size
    }

    /// The log file, if file-backed.
    pub fn log_file(&self) -> Option<PathBuf> {
        self.backing.dir.as_deref().map(|d| log_path(d, self.base))
    }

    /// Appends one record; the caller checked `fits(size)`.
    #[inline]
    pub fn append(&mut self, size: usize, ts: u64, topic: &[u8], headers: &[u8], payload: &[u8]) {
        let pos = self.write_pos;
        assert!(self.fits(size), "append past segment capacity");
        if pos + size > self.populated {
            self.populate_ahead(pos + size);
        }
        // SAFETY: `[pos, pos + size)` is inside the writable mapping (`fits`), at or past
        // `visible_pos` so no reader's `View` covers it, and only `&mut self` writes.
        let dst = unsafe { self.buf.slice_mut(pos, pos + size) };
        encode(dst, self.base + self.count, ts, topic, headers, payload);
        self.index.observe(self.count, pos, ts);
        if self.count == 0 {
            self.first_ts = ts;
        }
        self.last_ts = ts;
        self.last_pos = pos;
        self.count += 1;
        self.write_pos = pos + size;
    }

    /// Faults in the pages up to `end` plus one step (as large as `end`, from
    /// [`POPULATE_FIRST`] to [`POPULATE_STEP`]), so the copies that follow hit mapped
    /// pages; a reused mapping's resident part is skipped (zeroing or re-walking it cost as
    /// much as the copy itself with 1 MiB records). Stops faulting in for this segment when
    /// the kernel refuses.
    #[cold]
    fn populate_ahead(&mut self, end: usize) {
        let from = self.populated.max(self.write_pos).max(self.dirty);
        let step = end.next_power_of_two().clamp(POPULATE_FIRST, POPULATE_STEP);
        let to = (end + step).min(self.cap);
        if from < to && !self.populate_off && !self.buf.populate(from & !4095, to) {
            self.populate_off = true;
        }
        self.populated = to;
        self.write_behind();
    }

    /// With `mmap` storage, starts the writeback of every whole [`WRITEBACK_STEP`] written
    /// since the last call (runs once per populate step, so about once a MiB).
    fn write_behind(&mut self) {
        let done = self.write_pos - self.write_pos % WRITEBACK_STEP;
        if done <= self.written_back || self.backing.fsync {
            return;
        }
        if let Some(file) = &self.backing.file {
            start_writeback(file, self.written_back, done - self.written_back);
        }
        self.written_back = done;
    }

    /// A new, empty segment on a spare mapping of at least `cap` bytes.
    pub fn reuse(base: u64, spare: Spare, cap: usize, backing: Backing) -> Segment {
        let mut seg = Segment::new(base, spare.buf, cap, backing);
        seg.dirty = spare.dirty.min(cap);
        seg
    }

    /// The mapping of a memory segment nobody reads any more, for reuse.
    pub fn into_spare(self) -> Option<Spare> {
        if self.backing.dir.is_some() {
            return None;
        }
        let dirty = self.write_pos.max(self.dirty);
        Arc::try_unwrap(self.buf)
            .ok()
            .map(|buf| Spare { buf, dirty })
    }

    /// Makes appended records durable (fsync storage) and then visible to readers.
    pub fn commit(&mut self) -> Result<(), LogError> {
        if self.backing.dir_unsynced && self.write_pos > self.synced_pos {
            if let Some(dir) = &self.backing.dir {
                sync_dir(dir)?;
            }
            self.backing.dir_unsynced = false;
        }
        if self.backing.fsync && self.write_pos > self.synced_pos {
            let path = self.log_file().unwrap_or_default();
            let (buf, start, end) = (&self.buf, self.synced_pos, self.write_pos);
            self.fence
                .flush(&path, || sync_range(buf, &path, start, end))?;
        }
        self.synced_pos = self.write_pos;
        self.visible_pos = self.write_pos;
        self.visible_count = self.count;
        Ok(())
    }

    /// With `fsync` storage: the flush that would make the records appended so far durable,
    /// to run without the log (see [`SyncJob`]). None when there is nothing to flush.
    pub fn sync_job(&self) -> Option<SyncJob> {
        (self.backing.fsync && self.write_pos > self.synced_pos).then(|| SyncJob {
            buf: self.buf.clone(),
            fence: self.fence.clone(),
            dir: self
                .backing
                .dir
                .clone()
                .filter(|_| self.backing.dir_unsynced),
            path: self.log_file().unwrap_or_default(),
            base: self.base,
            start: self.synced_pos,
            end: self.write_pos,
            count: self.count,
        })
    }

    /// A finished [`SyncJob`] of this segment: its records are durable, so they become
    /// visible. A job of an earlier segment is ignored (sealing committed all of it).
    pub fn finish_sync(&mut self, job: &SyncJob) {
        if job.base != self.base || job.end <= self.synced_pos {
            return;
        }
        if job.dir.is_some() {
            self.backing.dir_unsynced = false;
        }
        self.synced_pos = job.end;
        if job.end > self.visible_pos {
            self.visible_pos = job.end;
            self.visible_count = job.count;
        }
    }

    /// Commits, then makes the segment read-only. What is left to do on its files (cut the
    /// file to its data, persist the index, which is what lets the next open skip scanning
    /// it) is returned for the log's housekeeping thread: inline, the `ftruncate` of a mapped
    /// file (and with `fsync` storage two file syncs) stalled every connection of the thread
    /// that rolled, by up to tens of milliseconds (`examples/roll_stall.rs`). A crash before it is done leaves a
    /// segment that the next open scans and cuts ([`recovery`](crate::recovery)).
    /// A seal whose commit failed can be tried again.
    pub fn seal(&mut self) -> Result<Option<SealFiles>, LogError> {
        self.commit()?;
        self.cap = self.write_pos;
        let (Some(dir), Some(file)) = (self.backing.dir.clone(), self.backing.file.take()) else {
            return Ok(None);
        };
        if self.backing.fsync {
            // Read only from now on: readahead helps again.
            self.buf.advise_single_pages(false);
        }
        Ok(Some(SealFiles {
            path: log_path(&dir, self.base),
            dir,
            file,
            len: self.write_pos as u64,
            fsync: self.backing.fsync,
            index: (self.count > 0).then(|| self.index_file()),
        }))
    }

    /// Sealed and file-backed: the segment's mapping and file, for drop-behind (see
    /// [`cache`](crate::cache)). The log drops them one segment after the seal, so the pages
    /// freed are the ones the next segments' faults get back, still hot, instead of fresh
    /// memory (docs/ARCHITECTURE.md, "Drop-behind").
    pub fn sealed_pages(&self) -> Option<SealedPages> {
        let dir = self.backing.dir.as_deref()?;
        if self.backing.file.is_some() {
            return None;
        }
        Some(SealedPages {
            buf: self.buf.clone(),
            path: log_path(dir, self.base),
        })
    }

    /// The persisted form of this segment's index.
    pub fn index_file(&self) -> IndexFile {
        IndexFile {
            base: self.base,
            count: self.count,
            lost: self.lost,
            data_len: self.write_pos as u64,
            first_ts: self.first_ts,
            last_ts: self.last_ts,
            last_pos: self.last_pos as u64,
            index: self.index.clone(),
        }
    }

    /// Deletes the segment's files (retention); the mapping lives on while `Bytes` refer to it.
    pub fn remove_files(&self) -> Result<(), LogError> {
        if let Some(dir) = &self.backing.dir {
            // The index first: a crash in between leaves a segment that is rescanned, never an
            // index without its segment.
            for path in [idx_path(dir, self.base), log_path(dir, self.base)] {
                match fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(LogError::io("remove", &path)(e))
                    }
                    _ => {}
                }
            }
            if self.backing.fsync {
                sync_dir(dir)?;
            }
        }
        Ok(())
    }

    /// Appended bytes `[0, write_pos)`.
    fn data(&self) -> &[u8] {
        // SAFETY: in bounds; `[0, visible_pos)` is immutable and `[visible_pos, write_pos)` is
        // written only through `&mut self`, which cannot coexist with this `&self` borrow.
        unsafe { self.buf.slice(0, self.write_pos) }
    }

    /// What the walk finds at `pos`, where offset `at` belongs: the record, or the offsets
    /// from `at` that have none (a loss marker, or damage found now). Segments trusted at
    /// open on their index alone also get their CRC checked, so damage inside them is
    /// refused rather than served; the walk then finds the next valid record to go on from.
    fn step(&self, data: &[u8], pos: usize, at: u64) -> Step {
        let checked = if self.check_reads {
            check_record(data, pos, at..at + 1, 0)
        } else {
            parse_header(data, pos).and_then(|h| match h.offset == at {
                true => Ok(h),
                false => Err(Damage::WrongOffset {
                    expected: at,
                    found: h.offset,
                }),
            })
        };
        let end = self.next_offset();
        match checked {
            Ok(h) if !h.is_marker() => Step::Record(h),
            Ok(h) => {
                let next_pos = pos + h.size;
                let upto = if next_pos < data.len() {
                    parse_header(data, next_pos).map_or(end, |n| n.offset.clamp(at + 1, end))
                } else {
                    end
                };
                Step::Lost(Gap {
                    pos,
                    next_pos,
                    first: at,
                    end: upto,
                    damage: None,
                })
            }
            Err(damage) => {
                let (next_pos, upto) = resync(data, pos + 1, at + 1..end, 0)
                    .map_or((data.len(), end), |(p, h)| (p, h.offset));
                Step::Lost(Gap {
                    pos,
                    next_pos,
                    first: at,
                    end: upto,
                    damage: Some(damage),
                })
            }
        }
    }

    /// The error for a reader asking for `offset` inside `gap`.
    fn lost(&self, offset: u64, gap: Gap) -> LogError {
        match gap.damage {
            Some(damage) => LogError::Corrupt {
                base: self.base,
                pos: gap.pos,
                offset,
                damage,
                resume: gap.end,
            },
            None => LogError::Lost {
                offset,
                first: gap.first,
                resume: gap.end,
            },
        }
    }

    /// Position of the record with `offset` (`base <= offset < next_offset()`).
    fn position_of(&self, offset: u64) -> Result<usize, LogError> {
        let rel = offset - self.base;
        let start = self.index.floor_offset(rel).unwrap_or_default();
        let (mut pos, mut at) = (start.pos as usize, self.base + u64::from(start.rel));
        let data = self.data();
        while at < offset {
            match self.step(data, pos, at) {
                Step::Record(h) => {
                    pos += h.size;
                    at += 1;
                }
                Step::Lost(gap) if offset < gap.end => return Err(self.lost(offset, gap)),
                Step::Lost(gap) => (pos, at) = (gap.next_pos, gap.end),
            }
        }
        Ok(pos)
    }

    /// The first appended offset whose timestamp is >= `ts`, if any (offsets without a
    /// record are passed over).
    pub fn offset_for_time(&self, ts: u64) -> Result<Option<u64>, LogError> {
        if self.count == 0 || self.last_ts < ts {
            return Ok(None);
        }
        let start = self.index.floor_time(ts).unwrap_or_default();
        let (mut pos, mut at) = (start.pos as usize, self.base + u64::from(start.rel));
        let data = self.data();
        while at < self.next_offset() {
            match self.step(data, pos, at) {
                Step::Record(h) if h.timestamp >= ts => return Ok(Some(at)),
                Step::Record(h) => {
                    pos += h.size;
                    at += 1;
                }
                Step::Lost(gap) => (pos, at) = (gap.next_pos, gap.end),
            }
        }
        Ok(None)
    }

    /// Appends visible records from `from` to `out` under the limits; returns false once a limit
    /// stopped it, or an offset without a record after some were taken (so the caller does
    /// not continue into the next segment, and the next read reports it).
    pub fn read_into(
        &self,
        from: u64,
        limits: &mut Limits,
        out: &mut Vec<Record>,
    ) -> Result<bool, LogError> {
        let end_offset = self.base + self.visible_count;
        if from >= end_offset {
            return Ok(true);
        }
        let from = from.max(self.base);
        let start = match self.position_of(from) {
            Ok(pos) => pos,
            Err(_) if limits.taken > 0 => return Ok(false),
            Err(e) => return Err(e),
        };
        let view = Bytes::from_owner(View::new(self.buf.clone(), start, self.visible_pos));
        let data = self.data();
        let (mut pos, mut offset) = (start, from);
        while offset < end_offset {
            let h = match self.step(data, pos, offset) {
                Step::Record(h) => h,
                Step::Lost(_) if limits.taken > 0 => return Ok(false),
                Step::Lost(gap) => return Err(self.lost(offset, gap)),
            };
            if !limits.take(h.size) {
                return Ok(false);
            }
            let r = pos - start;
            let t = r + crate::format::RECORD_HEADER;
            let hd = t + h.topic_len;
            let p = hd + h.headers_len;
            out.push(Record {
                offset: h.offset,
                timestamp: h.timestamp,
                topic: view.slice(t..hd),
                headers: view.slice(hd..p),
                payload: view.slice(p..r + h.size),
            });
            pos += h.size;
            offset += 1;
        }
        Ok(true)
    }
}

/// One step of a walk through a segment.
enum Step {
    /// A record holding the offset asked for.
    Record(Header),
    /// Offsets with no record.
    Lost(Gap),
}

/// Offsets `[first, end)` without a record, from byte `pos` to `next_pos`: a loss marker
/// (`damage` none), or damage met by a read.
struct Gap {
    pos: usize,
    next_pos: usize,
    first: u64,
    end: u64,
    damage: Option<Damage>,
}

/// Remaining read limits: record count and bytes, with "at least one record".
pub struct Limits {
    pub records: usize,
    pub bytes: usize,
    pub taken: usize,
}

impl Limits {
    /// Accounts for one more record of `size` bytes, or refuses it.
    fn take(&mut self, size: usize) -> bool {
        if self.records == 0 || (self.taken > 0 && size > self.bytes) {
            return false;
        }
        self.records -= 1;
        self.bytes = self.bytes.saturating_sub(size);
        self.taken += 1;
        true
    }
}

/// Sizes `file` to `len` bytes and reserves its disk blocks. Without the reservation a full
/// disk would surface as SIGBUS on a write through the mapping instead of an error here.
pub fn preallocate(file: &File, len: u64) -> std::io::Result<()> {
    file.set_len(len)?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let len = libc::off_t::try_from(len).map_err(|_| std::io::ErrorKind::InvalidInput)?;
        // SAFETY: a plain system call on a descriptor `file` keeps open; no memory is passed.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
        // EOPNOTSUPP: the file system cannot reserve; the file stays sparse.
        if rc != 0 && rc != libc::EOPNOTSUPP {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
    }
    Ok(())
}

/// A new file at `path` with `cap` bytes reserved (and synced, for `fsync`).
pub fn prepare_file(path: &Path, cap: usize, fsync: bool) -> Result<File, LogError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(LogError::io("create", path))?;
    preallocate(&file, cap as u64).map_err(LogError::io("preallocate", path))?;
    if fsync {
        sync_file(&file, path)?;
    }
    Ok(file)
}

/// The least a segment file is made with when the disk has no room for a full one.
pub const MIN_SEGMENT: usize = 64 << 10;

/// [`create_file`], with a smaller file when the disk has no room for `cap` bytes: halves
/// the size down to `min` (at least [`MIN_SEGMENT`]), so the disk fills up to its last
/// megabytes rather than failing a whole segment size before it is full.
///
/// # Errors
/// As [`create_file`]; the last error when not even `min` bytes fit.
pub fn create_fitting(
    dir: &Path,
    base: u64,
    cap: usize,
    min: usize,
    fsync: bool,
) -> Result<Segment, LogError> {
    let min = min.max(MIN_SEGMENT).min(cap);
    let mut size = cap;
    loop {
        match create_file(dir, base, size, fsync) {
            Err(e) if e.is_storage_full() && size > min => size = (size / 2).max(min),
            other => return other,
        }
    }
}

/// Creates `BASE.log` for a new active segment of `cap` bytes. The file is prepared and
/// mapped as `BASE.log.tmp` and renamed into place last, so a failure (a full disk, no
/// memory for the mapping) leaves any segment already at `BASE.log` untouched: the log
/// replaces an empty active segment this way.
pub fn create_file(dir: &Path, base: u64, cap: usize, fsync: bool) -> Result<Segment, LogError> {
    let tmp = log_path(dir, base).with_extension("log.tmp");
    prepare_file(&tmp, cap, fsync)
        .and_then(|file| {
            let buf = MapBuf::file_rw(&file).map_err(LogError::io("mmap", &tmp))?;
            install(dir, base, &tmp, file, buf, cap, fsync)
        })
        .inspect_err(|_| {
            let _ = fs::remove_file(&tmp);
        })
}

/// Makes the file at `tmp` (prepared by [`prepare_file`] with at least `cap` bytes, mapped
/// as `buf`) the new active segment `BASE.log`, by renaming it. Once renamed, the segment is
/// returned even if the directory's fsync fails (the old name is gone): its first flush
/// syncs the directory again, so nothing of it counts as durable before that.
///
/// # Errors
/// The rename failed; `tmp` is left where it was.
pub fn install(
    dir: &Path,
    base: u64,
    tmp: &Path,
    file: File,
    buf: MapBuf,
    cap: usize,
    fsync: bool,
) -> Result<Segment, LogError> {
    let path = log_path(dir, base);
    fs::rename(tmp, &path).map_err(LogError::io("rename", &path))?;
    let dir_unsynced = fsync && sync_dir(dir).is_err();
    let backing = Backing {
        dir: Some(dir.to_path_buf()),
        file: Some(file),
        fsync,
        dir_unsynced,
    };
    Ok(Segment::new(base, buf, cap, backing))
}
