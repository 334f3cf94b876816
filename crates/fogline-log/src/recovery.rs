//! Opening a stream directory: find segments, validate, repair, report.
//!
//! Sealed segments (all but the last) with a valid `.idx` whose summary matches the file are
//! trusted after checking the CRC and offsets of their first and last records; otherwise they
//! are scanned record by record, cut at the first invalid record and re-indexed. The last
//! segment is always scanned in full, its invalid tail zeroed to the end of the file (so stale
//! bytes can never be misread as records later) and it becomes the active segment.

use crate::buf::MapBuf;
use crate::format::{check_record, Damage};
use crate::index::IndexFile;
use crate::scan::{scan, Scan};
use crate::segment::{
    idx_path, log_path, preallocate, sync_dir, write_index, Backing, Recovered, Segment,
};
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
    /// Records in the log after opening.
    pub records: u64,
    /// Segments that were scanned record by record (the active one and any sealed segment
    /// without a usable index).
    pub scanned: usize,
    /// Index files that were (re)written.
    pub indexes_rebuilt: usize,
    /// Data cut off because it was torn, corrupt or out of place.
    pub truncations: Vec<Truncation>,
    /// Files deleted: empty segments and leftover temporary files.
    pub removed: Vec<PathBuf>,
    /// Offsets missing between segments, as `[from, to)`.
    pub gaps: Vec<(u64, u64)>,
}

/// One cut made by recovery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Truncation {
    /// The segment file.
    pub file: PathBuf,
    /// Byte position where valid data ends.
    pub position: u64,
    /// Non-zero bytes dropped after that position.
    pub bytes_dropped: u64,
    /// The offset the first dropped record would have had.
    pub first_dropped_offset: u64,
    /// Why the data there was invalid.
    pub damage: Damage,
}

impl RecoveryReport {
    /// True when nothing had to be dropped, deleted or rebuilt. Gaps do not count: they are a
    /// lasting state (the records present are valid), listed on every open.
    pub fn is_clean(&self) -> bool {
        self.truncations.is_empty() && self.removed.is_empty() && self.indexes_rebuilt == 0
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
        for t in &self.truncations {
            write!(
                f,
                "\n  truncated {} at byte {}: {} ({} bytes dropped from offset {})",
                t.file.display(),
                t.position,
                t.damage,
                t.bytes_dropped,
                t.first_dropped_offset
            )?;
        }
        for p in &self.removed {
            write!(f, "\n  removed {}", p.display())?;
        }
        for (a, b) in &self.gaps {
            write!(f, "\n  offsets {a}..{b} missing")?;
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
    let (bases, temps) = list_segments(dir)?;
    for t in temps {
        fs::remove_file(&t).map_err(LogError::io("remove", &t))?;
        report.removed.push(t);
    }
    let mut segments: Vec<Segment> = Vec::with_capacity(bases.len() + 1);
    for (i, &base) in bases.iter().enumerate() {
        match bases.get(i + 1) {
            Some(&next) => {
                if let Some(s) = open_sealed(p, base, next, &mut report)? {
                    segments.push(s);
                }
            }
            None => segments.push(open_active(p, base, &mut report)?),
        }
    }
    if segments.is_empty() {
        segments.push(crate::segment::create_file(
            dir,
            0,
            p.segment_bytes,
            p.fsync,
        )?);
    }
    for w in segments.windows(2) {
        if w[0].next_offset() < w[1].base {
            report.gaps.push((w[0].next_offset(), w[1].base));
        }
    }
    if p.fsync && !report.is_clean() {
        sync_dir(dir)?;
    }
    report.segments = segments.len();
    report.records = segments.iter().map(|s| s.count).sum();
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
    Recovered {
        base,
        count: s.count,
        end: s.end,
        first_ts: s.first_ts,
        last_ts: s.last_ts,
        last_pos: s.last_pos,
        index: s.index.clone(),
    }
}

fn note_damage(report: &mut RecoveryReport, file: &Path, base: u64, s: &Scan) {
    if let Some(damage) = s.damage.clone() {
        report.truncations.push(Truncation {
            file: file.to_path_buf(),
            position: s.end as u64,
            bytes_dropped: s.dropped_bytes(),
            first_dropped_offset: base + s.count,
            damage,
        });
    }
}

/// Opens the last segment for appending: scans it fully and zeroes everything after the data.
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
    let cap = len.clamp(p.segment_bytes as u64, max);
    preallocate(&file, cap).map_err(LogError::io("preallocate", &path))?;
    let buf = MapBuf::file_rw(&file).map_err(LogError::io("mmap", &path))?;
    let cap = cap as usize;
    // SAFETY: the mapping is new and not shared yet; nothing else reads or writes it.
    let s = scan(unsafe { buf.slice(0, cap) }, base, None);
    report.scanned += 1;
    note_damage(report, &path, base, &s);
    if s.dirty_end > s.end {
        // SAFETY: as above; the range is inside the mapping.
        unsafe { buf.slice_mut(s.end, s.dirty_end) }.fill(0);
        if p.fsync {
            buf.flush(s.end, s.dirty_end)
                .map_err(LogError::io("msync", &path))?;
        }
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

/// Opens a sealed segment read-only; `None` (files deleted) when it holds no valid record.
fn open_sealed(
    p: &OpenParams,
    base: u64,
    next_base: u64,
    report: &mut RecoveryReport,
) -> Result<Option<Segment>, LogError> {
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
                        end: len as usize,
                        first_ts: f.first_ts,
                        last_ts: f.last_ts,
                        last_pos: f.last_pos as usize,
                        index: f.index,
                    };
                    let seg = Segment::recovered(r, buf, len as usize, backing());
                    return Ok(Some(seg.check_reads()));
                }
            }
        }
    }
    let buf = MapBuf::file_ro(&file).map_err(LogError::io("mmap", &path))?;
    let cut = len.min(u32::MAX as u64) as usize;
    // SAFETY: the mapping is new and private to this function; the file is not written.
    let s = scan(unsafe { buf.slice(0, cut) }, base, Some(next_base));
    report.scanned += 1;
    let s = if len > cut as u64 && s.damage.is_none() {
        Scan {
            damage: Some(Damage::TrailingGarbage),
            ..s
        }
    } else {
        s
    };
    note_damage(report, &path, base, &s);
    drop(buf);
    if s.count == 0 {
        for f in [&path, &idx] {
            if f.exists() {
                fs::remove_file(f).map_err(LogError::io("remove", f))?;
                report.removed.push(f.clone());
            }
        }
        return Ok(None);
    }
    if (s.end as u64) < len {
        let rw = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(LogError::io("open", &path))?;
        rw.set_len(s.end as u64)
            .map_err(LogError::io("truncate", &path))?;
        rw.sync_all().map_err(LogError::io("fsync", &path))?;
    }
    let r = recovered(base, &s);
    let seg = Segment::recovered(
        r,
        MapBuf::file_ro(&file).map_err(LogError::io("mmap", &path))?,
        s.end,
        backing(),
    );
    write_index(dir, &seg.index_file(), true)?;
    report.indexes_rebuilt += 1;
    Ok(Some(seg))
}

/// The cheap checks that let a sealed segment skip the scan.
fn index_matches(f: &IndexFile, buf: &MapBuf, len: u64, base: u64, next_base: u64) -> bool {
    if f.base != base || f.data_len != len || base.saturating_add(f.count) > next_base {
        return false;
    }
    // SAFETY: read-only mapping of a sealed segment that nothing writes; `len` is its length.
    let data = unsafe { buf.slice(0, len as usize) };
    let first = check_record(data, 0, base, 0);
    let last = check_record(data, f.last_pos as usize, base + f.count - 1, f.last_ts);
    matches!((first, last), (Ok(a), Ok(b))
        if a.timestamp == f.first_ts && b.timestamp == f.last_ts
            && f.last_pos as usize + b.size == len as usize)
}
