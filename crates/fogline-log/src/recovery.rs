//! Opening a stream directory: find segments, validate, repair, report.
//!
//! Sealed segments (all but the last) with a valid `.idx` whose summary matches the file are
//! trusted after checking the CRC and offsets of their first and last records; otherwise they
//! are scanned record by record. The last segment is always scanned in full and becomes the
//! active segment.
//!
//! Damage inside a segment's data costs only the damaged records: the scan finds the next
//! valid record, and the damaged stretch is overwritten in place by a loss marker for its
//! offsets, so the records after it stay and a reader asking for a lost offset is told.
//! Damage with nothing valid after it ends the data: a sealed segment's tail becomes a marker
//! for the offsets up to the next segment; the active segment's tail (a write torn by a
//! crash, as a rule) is zeroed to the end of the file, so stale bytes can never be misread
//! as records later, and its offsets are given out again. Every repair is reported. (A sealed
//! segment with zeros after intact data and no index is a seal a crash cut short, not
//! damage: it is cut and indexed without a report.)
//!
//! With `fsync` storage, opening syncs the active segment and the directory whatever it
//! found: after a `kill -9` the page cache may hold records that were appended but never
//! committed, and a segment renamed into place whose directory entry was never synced. The
//! log serves both from then on, so both must be durable first (`tests/power_cut`).

use crate::buf::MapBuf;
use crate::durability::{sync_dir, sync_file};
use crate::format::{check_record, encode_marker, Damage, RECORD_HEADER};
use crate::index::IndexFile;
use crate::scan::{scan, scan_to, Scan};
use crate::segment::{idx_path, log_path, preallocate, write_index, Backing, Recovered, Segment};
use crate::LogError;
use serde::Serialize;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

/// What `Log::open` found and repaired.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RecoveryReport {
    /// The stream directory (`None` for memory storage).
    pub dir: Option<PathBuf>,
    /// Segments in the log after opening.
    pub segments: usize,
    /// Intact records in the log after opening.
    pub records: u64,
    /// Segments that were scanned record by record (the active one and any sealed segment
    /// without a usable index).
    pub scanned: usize,
    /// Index files that were (re)written.
    pub indexes_rebuilt: usize,
    /// Damage found, and what was done about it.
    pub repairs: Vec<Repair>,
    /// Leftover temporary files deleted.
    pub removed: Vec<PathBuf>,
    /// Offsets missing between segments, as `[from, to)`: a segment file is gone.
    pub gaps: Vec<(u64, u64)>,
}

/// One repair made by recovery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Repair {
    /// The segment file.
    pub file: PathBuf,
    /// Byte position where the damage starts.
    pub position: u64,
    /// Damaged bytes dropped.
    pub bytes: u64,
    /// The first offset dropped.
    pub first_offset: u64,
    /// The offset after the last one dropped; `None` when the active segment's tail was cut
    /// (its offsets are given out again).
    pub end_offset: Option<u64>,
    /// What was wrong there.
    pub damage: Damage,
}

impl Repair {
    /// Offsets that lost their records for good.
    pub fn offsets_lost(&self) -> u64 {
        self.end_offset.map_or(0, |e| e - self.first_offset)
    }
}

impl fmt::Display for Repair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        match self.end_offset {
            Some(end) => write!(
                f,
                "offsets {}..{end} lost in {file}: {} at byte {} ({} bytes dropped)",
                self.first_offset, self.damage, self.position, self.bytes
            ),
            None => write!(
                f,
                "cut {file} at byte {} from offset {}: {} ({} bytes)",
                self.position, self.first_offset, self.damage, self.bytes
            ),
        }
    }
}

impl RecoveryReport {
    /// True when nothing had to be dropped, deleted or rebuilt, and no segment is missing.
    pub fn is_clean(&self) -> bool {
        self.repairs.is_empty()
            && self.removed.is_empty()
            && self.indexes_rebuilt == 0
            && self.gaps.is_empty()
    }

    /// True when records were dropped or are missing: worth a warning, not a note.
    pub fn lost_data(&self) -> bool {
        !self.repairs.is_empty() || !self.gaps.is_empty()
    }
}

impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let dir = self.dir.as_deref().unwrap_or(Path::new("(memory)"));
        write!(
            f,
            "{}: {} records in {} segments ({} scanned, {} indexes rebuilt)",
            dir.display(),
            self.records,
            self.segments,
            self.scanned,
            self.indexes_rebuilt
        )?;
        for r in &self.repairs {
            write!(f, "\n  {r}")?;
        }
        for p in &self.removed {
            write!(f, "\n  removed {}", p.display())?;
        }
        for (a, b) in &self.gaps {
            write!(f, "\n  offsets {a}..{b} missing: a segment file is gone")?;
        }
        Ok(())
    }
}

/// Segment base offsets found in `dir`, sorted, plus leftover temporary files.
pub fn list_segments(dir: &Path) -> Result<(Vec<u64>, Vec<PathBuf>), LogError> {
    let mut bases = Vec::new();
    let mut temps = Vec::new();
    for entry in fs::read_dir(dir).map_err(LogError::io("read directory", dir))? {
        let entry = entry.map_err(LogError::io("read directory", dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name == crate::prepare::NEXT_FILE {
            // The next segment made ahead: no damage, whether the log is open (verify of
            // a live directory) or was killed; `open_dir` removes it quietly.
            continue;
        }
        if name.ends_with(".idx.tmp") || name.ends_with(".log.tmp") {
            temps.push(entry.path());
        } else if let Some(stem) = name.strip_suffix(".log") {
            if stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit()) {
                // Offsets beyond 2^63 never occur; refusing them keeps offset sums exact.
                if let Ok(base) = stem.parse::<u64>() {
                    if base <= i64::MAX as u64 {
                        bases.push(base);
                    }
                }
            }
        }
    }
    bases.sort_unstable();
    temps.sort();
    Ok((bases, temps))
}

/// Options recovery needs from `LogOptions`.
pub struct OpenParams<'a> {
    pub dir: &'a Path,
    pub segment_bytes: usize,
    pub fsync: bool,
}

/// Opens every segment of a stream directory (creating the directory and a first segment when
/// there are none).
pub fn open_dir(p: &OpenParams) -> Result<(Vec<Segment>, RecoveryReport, File), LogError> {
    let dir = p.dir;
    let created = !dir.exists();
    fs::create_dir_all(dir).map_err(LogError::io("create directory", dir))?;
    if created && p.fsync {
        // The stream's records survive power loss only if its directory's entry does.
        if let Some(parent) = dir.parent().filter(|d| !d.as_os_str().is_empty()) {
            sync_dir(parent)?;
        }
    }
    let lock = lock_dir(dir)?;
    let mut report = RecoveryReport {
        dir: Some(dir.to_path_buf()),
        ..RecoveryReport::default()
    };
    // Made ahead by the log before a kill or a crash; made again when needed.
    let _ = fs::remove_file(dir.join(crate::prepare::NEXT_FILE));
    let (bases, temps) = list_segments(dir)?;
    for t in temps {
        fs::remove_file(&t).map_err(LogError::io("remove", &t))?;
        report.removed.push(t);
    }
    let mut segments: Vec<Segment> = Vec::with_capacity(bases.len() + 1);
    for (i, &base) in bases.iter().enumerate() {
        match bases.get(i + 1) {
            Some(&next) => {
                segments.push(open_sealed(p, base, next, &mut report)?);
            }
            None => segments.push(open_active(p, base, &mut report)?),
        }
    }
    if segments.is_empty() {
        segments.push(crate::segment::create_fitting(
            dir,
            0,
            p.segment_bytes,
            0,
            p.fsync,
        )?);
    }
    for w in segments.windows(2) {
        if w[0].next_offset() < w[1].base {
            report.gaps.push((w[0].next_offset(), w[1].base));
        }
    }
    if p.fsync {
        // The entries found must be durable before any record in them is served: a process
        // killed between renaming a new segment into place and syncing the directory leaves
        // a segment that is in the page cache only, and a clean-looking directory.
        sync_dir(dir)?;
    }
    report.segments = segments.len();
    report.records = segments.iter().map(|s| s.count - s.lost).sum();
    Ok((segments, report, lock))
}

/// Name of the lock file in a stream directory.
pub const LOCK_FILE: &str = ".lock";

/// Takes an exclusive `flock` on `DIR/.lock`, held while the returned file is open: two
/// processes appending to one directory would corrupt it (a crash releases the lock).
fn lock_dir(dir: &Path) -> Result<File, LogError> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(LogError::io("create", &path))?;
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: a plain system call on a descriptor `file` keeps open; no memory is passed.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::WouldBlock {
                return Err(LogError::Locked(dir.to_path_buf()));
            }
            return Err(LogError::io("lock", &path)(err));
        }
    }
    Ok(file)
}

fn recovered(base: u64, s: &Scan) -> Recovered {
    debug_assert!(
        s.lost.is_empty(),
        "recovery marks damage before it builds a segment"
    );
    Recovered {
        base,
        count: s.count,
        lost: s.marked_offsets(),
        end: s.end,
        first_ts: s.first_ts,
        last_ts: s.last_ts,
        last_pos: s.last_pos,
        index: s.index.clone(),
    }
}

/// Reports the damaged stretches a scan found inside the data (each becomes a marker).
fn note_lost(report: &mut RecoveryReport, file: &Path, s: &Scan) {
    for l in &s.lost {
        report.repairs.push(Repair {
            file: file.to_path_buf(),
            position: l.pos as u64,
            bytes: (l.end_pos - l.pos) as u64,
            first_offset: l.first,
            end_offset: Some(l.end),
            damage: l.damage.clone(),
        });
    }
}

/// One past the file's last byte that may not be zero, up to `cap`: the end of its last
/// data region (`SEEK_DATA`, `SEEK_HOLE`); what lies past it is a hole, which reads as zeros.
/// A preallocated segment is mostly unwritten extents, which ext4 and xfs report as holes
/// unless the page cache holds data for them. Where the calls are missing or fail, `cap`.
pub(crate) fn data_end(file: &File, cap: usize) -> usize {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        let mut end = 0usize;
        let mut pos: libc::off_t = 0;
        // Bounded: a segment file has few extents, and each turn moves past one.
        for _ in 0..4096 {
            // SAFETY: plain system calls on a descriptor `file` keeps open.
            let data = unsafe { libc::lseek(fd, pos, libc::SEEK_DATA) };
            if data < 0 {
                // ENXIO: no data at or past `pos`; anything else: not known, scan it all.
                return if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENXIO) {
                    end.min(cap)
                } else {
                    cap
                };
            }
            // SAFETY: as above.
            let hole = unsafe { libc::lseek(fd, data, libc::SEEK_HOLE) };
            let Ok(hole) = usize::try_from(hole) else {
                return cap;
            };
            end = hole;
            if hole >= cap {
                return cap;
            }
            pos = hole as libc::off_t;
        }
        cap
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        cap
    }
}

/// Opens the last segment for appending: scans it fully, marks damaged stretches and zeroes
/// everything after the data.
fn open_active(
    p: &OpenParams,
    base: u64,
    report: &mut RecoveryReport,
) -> Result<Segment, LogError> {
    let path = log_path(p.dir, base);
    let idx = idx_path(p.dir, base);
    if idx.exists() {
        // An active segment has no index file; one left from a seal interrupted before the
        // next segment was created would go stale on the first append.
        fs::remove_file(&idx).map_err(LogError::io("remove", &idx))?;
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .map_err(LogError::io("open", &path))?;
    let len = file.metadata().map_err(LogError::io("stat", &path))?.len();
    let max = u32::MAX as u64;
    let cap = grow_active(
        &file,
        &path,
        len.min(max),
        (p.segment_bytes as u64).min(max),
    )?;
    let buf = MapBuf::file_rw(&file).map_err(LogError::io("mmap", &path))?;
    let cap = cap as usize;
    let zero_from = data_end(&file, cap);
    // SAFETY: the mapping is new and not shared yet; nothing else reads or writes it.
    let mut s = scan_to(unsafe { buf.slice(0, cap) }, base, None, zero_from);
    report.scanned += 1;
    note_lost(report, &path, &s);
    if let Some(damage) = s.damage.clone() {
        report.repairs.push(Repair {
            file: path.clone(),
            position: s.end as u64,
            bytes: s.dropped_bytes(),
            first_offset: base + s.count,
            end_offset: None,
            damage,
        });
    }
    for l in &s.lost {
        // SAFETY: as above; the stretch is inside the mapping.
        encode_marker(
            unsafe { buf.slice_mut(l.pos, l.end_pos) },
            l.first,
            l.timestamp,
        );
    }
    if s.dirty_end > s.end {
        // SAFETY: as above; the range is inside the mapping.
        unsafe { buf.slice_mut(s.end, s.dirty_end) }.fill(0);
    }
    if p.fsync {
        // Every record the log serves must be durable: also those found only in the page
        // cache (appended, never committed, by a process that was killed), which a power cut
        // could still take away after readers had them and their offsets were given out
        // again. One fsync covers them, the repairs above and the file's size.
        sync_file(&file, &path)?;
    }
    if !s.lost.is_empty() {
        // SAFETY: as above.
        s = scan_to(unsafe { buf.slice(0, cap) }, base, None, zero_from);
    }
    // The scan read every page up to the end of the file; those past the data are zeros that
    // need not stay in this process's resident memory until appends reach them.
    // SAFETY: a shared file mapping, and nothing refers into it yet.
    unsafe { buf.release(s.end, cap) };
    let backing = Backing {
        dir: Some(p.dir.to_path_buf()),
        file: Some(file),
        fsync: p.fsync,
        dir_unsynced: false,
    };
    Ok(Segment::recovered(recovered(base, &s), buf, cap, backing))
}

/// Grows the active segment's file to `want` bytes, or as far as the disk allows (halving
/// the growth down to `MIN_SEGMENT`): a full disk must not keep the log from opening, and
/// the first append that does not fit rolls to a new segment then. Returns the size made.
fn grow_active(file: &File, path: &Path, len: u64, want: u64) -> Result<u64, LogError> {
    let min = crate::segment::MIN_SEGMENT as u64;
    let mut size = want.max(len);
    loop {
        match preallocate(file, size) {
            Ok(()) => return Ok(size),
            Err(e) => {
                let full = LogError::io("preallocate", path)(e);
                if !full.is_storage_full() {
                    return Err(full);
                }
                if size <= len.max(min) {
                    // No room to grow at all: keep what the file has (its data, and zeros
                    // after it that an earlier start reserved), if anything.
                    file.set_len(len).map_err(LogError::io("truncate", path))?;
                    return if len > 0 { Ok(len) } else { Err(full) };
                }
                size = (size / 2).max(len.max(min));
            }
        }
    }
}

/// Opens a sealed segment read-only, scanning it when its index is missing or does not
/// match: damaged stretches are overwritten by loss markers, a damaged tail is replaced by a
/// marker for the offsets up to `next_base`, and the index is rebuilt.
fn open_sealed(
    p: &OpenParams,
    base: u64,
    next_base: u64,
    report: &mut RecoveryReport,
) -> Result<Segment, LogError> {
    let dir = p.dir;
    let path = log_path(dir, base);
    let idx = idx_path(dir, base);
    let file = File::open(&path).map_err(LogError::io("open", &path))?;
    let len = file.metadata().map_err(LogError::io("stat", &path))?.len();
    let backing = || Backing {
        dir: Some(dir.to_path_buf()),
        file: None,
        fsync: p.fsync,
        dir_unsynced: false,
    };
    if len > 0 && len <= u32::MAX as u64 {
        if let Ok(bytes) = fs::read(&idx) {
            if let Ok(f) = IndexFile::decode(&bytes) {
                let buf = MapBuf::file_ro(&file).map_err(LogError::io("mmap", &path))?;
                if index_matches(&f, &buf, len, base, next_base) {
                    let r = Recovered {
                        base,
                        count: f.count,
                        lost: f.lost,
                        end: len as usize,
                        first_ts: f.first_ts,
                        last_ts: f.last_ts,
                        last_pos: f.last_pos as usize,
                        index: f.index,
                    };
                    let seg = Segment::recovered(r, buf, len as usize, backing());
                    return Ok(seg.check_reads());
                }
            }
        }
    }
    let s = scan_file(&file, &path, len, base, next_base)?;
    report.scanned += 1;
    let s = if s.is_whole(base, next_base) {
        if (s.end as u64) < len {
            // Zeros after the data: a crash came before the seal cut the file (the seal's
            // file work runs after the roll, see `Segment::seal`). Nothing is damaged, so
            // the cut reports no repair.
            mark_sealed(&path, &s, base, next_base, report)?;
        }
        s
    } else {
        mark_sealed(&path, &s, base, next_base, report)?;
        scan_file(&file, &path, len, base, next_base)?
    };
    let seg = Segment::recovered(
        recovered(base, &s),
        MapBuf::file_ro(&file).map_err(LogError::io("mmap", &path))?,
        s.end,
        backing(),
    );
    write_index(dir, &seg.index_file(), true)?;
    report.indexes_rebuilt += 1;
    Ok(seg)
}

/// Scans a sealed segment's file (its current length: `len` may be stale after a repair).
fn scan_file(
    file: &File,
    path: &Path,
    len: u64,
    base: u64,
    next_base: u64,
) -> Result<Scan, LogError> {
    let len = file.metadata().map_or(len, |m| m.len());
    if len == 0 {
        return Ok(scan(&[], base, Some(next_base)));
    }
    let buf = MapBuf::file_ro(file).map_err(LogError::io("mmap", path))?;
    let cut = len.min(u32::MAX as u64) as usize;
    // SAFETY: the mapping is new and private to this function; the file is not written
    // while it lives.
    let s = scan(unsafe { buf.slice(0, cut) }, base, Some(next_base));
    Ok(if len > cut as u64 && s.damage.is_none() {
        Scan {
            damage: Some(Damage::TrailingGarbage),
            ..s
        }
    } else {
        s
    })
}

/// Writes the markers a damaged sealed segment needs and cuts it after its data, then
/// syncs it; a repair is reported only for damage or missing offsets.
fn mark_sealed(
    path: &Path,
    s: &Scan,
    base: u64,
    next_base: u64,
    report: &mut RecoveryReport,
) -> Result<(), LogError> {
    use std::os::unix::fs::FileExt;
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(LogError::io("open", path))?;
    note_lost(report, path, s);
    for l in &s.lost {
        let mut m = vec![0u8; l.end_pos - l.pos];
        encode_marker(&mut m, l.first, l.timestamp);
        file.write_all_at(&m, l.pos as u64)
            .map_err(LogError::io("write", path))?;
    }
    let first = base + s.count;
    let mut end = s.end as u64;
    if s.damage.is_some() || first < next_base {
        let len = file.metadata().map_err(LogError::io("stat", path))?.len();
        report.repairs.push(Repair {
            file: path.to_path_buf(),
            position: end,
            bytes: len.saturating_sub(end),
            first_offset: first,
            end_offset: (first < next_base).then_some(next_base),
            damage: s.damage.clone().unwrap_or(Damage::EndsEarly { next_base }),
        });
    }
    file.set_len(end).map_err(LogError::io("truncate", path))?;
    if first < next_base {
        // The offsets up to the next segment have no record left: one marker stands for them.
        let mut m = vec![0u8; RECORD_HEADER];
        encode_marker(&mut m, first, s.last_ts);
        file.write_all_at(&m, end)
            .map_err(LogError::io("write", path))?;
        end += RECORD_HEADER as u64;
    }
    debug_assert_eq!(file.metadata().map(|m| m.len()).ok(), Some(end));
    sync_file(&file, path)
}

/// The cheap checks that let a sealed segment skip the scan.
fn index_matches(f: &IndexFile, buf: &MapBuf, len: u64, base: u64, next_base: u64) -> bool {
    let next = base.saturating_add(f.count);
    if f.base != base || f.data_len != len || next > next_base {
        return false;
    }
    // SAFETY: read-only mapping of a sealed segment that nothing writes; `len` is its length.
    let data = unsafe { buf.slice(0, len as usize) };
    let first = check_record(data, 0, base..base + 1, 0);
    let last = check_record(data, f.last_pos as usize, base..next, f.last_ts);
    matches!((first, last), (Ok(a), Ok(b))
        if a.timestamp == f.first_ts && b.timestamp == f.last_ts
            && (b.is_marker() || b.offset == next - 1)
            && f.last_pos as usize + b.size == len as usize)
}
