//! `fogline log verify DIR [--repair]`: a full, read-only check of a data directory, and repair
//! through the same recovery `Log::open` runs.
//!
//! Files are read with `read(2)`, not mapped, so a concurrently truncated file cannot crash the
//! checker; repair, however, must not run while a server has the directory open.

use crate::format::Damage;
use crate::index::IndexFile;
use crate::recovery::{list_segments, RecoveryReport};
use crate::scan::scan;
use crate::segment::{idx_path, log_path};
use crate::{Log, LogError, LogOptions, Storage};
use serde::Serialize;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

/// Result of [`verify`].
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// One entry per stream directory found.
    pub streams: Vec<StreamReport>,
}

/// The check of one stream directory.
#[derive(Debug, Clone, Serialize)]
pub struct StreamReport {
    /// The stream directory.
    pub dir: PathBuf,
    /// Segments in offset order, as found.
    pub segments: Vec<SegmentReport>,
    /// Offsets missing between segments, `[from, to)`: a segment file is gone.
    pub gaps: Vec<(u64, u64)>,
    /// Leftover temporary files.
    pub temp_files: Vec<PathBuf>,
    /// What repair did, when it ran.
    pub repair: Option<RecoveryReport>,
    /// The segments after repair, when it ran.
    pub after_repair: Option<Vec<SegmentReport>>,
}

/// The check of one segment.
#[derive(Debug, Clone, Serialize)]
pub struct SegmentReport {
    /// The segment file.
    pub file: PathBuf,
    /// Offset of its first record (from the file name).
    pub base_offset: u64,
    /// Whether it is the active (last) segment.
    pub active: bool,
    /// Intact records.
    pub records: u64,
    /// The offset after the segment's last: its base plus the offsets it spans.
    pub next_offset: u64,
    /// Damaged stretches inside the data, with valid records after them: recovery would
    /// mark them lost.
    pub lost: Vec<LostRange>,
    /// Offsets marked lost by an earlier recovery, `[from, to)` (a note: reported then).
    pub marked: Vec<(u64, u64)>,
    /// Bytes of valid records.
    pub valid_bytes: u64,
    /// File length.
    pub file_bytes: u64,
    /// First valid timestamp.
    pub first_timestamp: Option<u64>,
    /// Last valid timestamp.
    pub last_timestamp: Option<u64>,
    /// Where and why the data stops being valid, if it does.
    pub damage: Option<Damage>,
    /// Non-zero bytes after the valid data.
    pub dropped_bytes: u64,
    /// Zero bytes after the data of a sealed segment (its file should end with its data).
    pub padding_bytes: u64,
    /// State of `BASE.idx`.
    pub index: IndexStatus,
}

/// A damaged stretch inside a segment's data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LostRange {
    /// First damaged byte.
    pub position: u64,
    /// Damaged bytes.
    pub bytes: u64,
    /// First offset whose record is damaged.
    pub first_offset: u64,
    /// The next intact record's offset.
    pub end_offset: u64,
    /// What is wrong.
    pub damage: Damage,
}

/// State of a segment's index file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", content = "reason", rename_all = "snake_case")]
pub enum IndexStatus {
    /// Present and equal to the index the records produce.
    Ok,
    /// Not present and not expected (active segment).
    NotExpected,
    /// A sealed segment without one (open will scan and rebuild it).
    Missing,
    /// A seal the log has not finished (it runs after the roll, on the log's housekeeping
    /// thread, or a crash came first): no index, and zeros after intact data. Not a
    /// problem: the log, or the next open, cuts the file and writes the index.
    Unfinished,
    /// Present but unreadable, or it disagrees with the records.
    Invalid(String),
    /// Present on the active segment (open deletes it).
    Unexpected,
}

impl SegmentReport {
    /// True when the segment needs no repair.
    pub fn is_ok(&self) -> bool {
        self.damage.is_none()
            && self.lost.is_empty()
            && (self.padding_bytes == 0 || self.index == IndexStatus::Unfinished)
            && (self.active || self.next_offset > self.base_offset)
            && matches!(
                self.index,
                IndexStatus::Ok | IndexStatus::NotExpected | IndexStatus::Unfinished
            )
    }
}

impl StreamReport {
    /// True when every segment is fine, none is missing and there are no leftover files.
    pub fn is_ok(&self) -> bool {
        self.temp_files.is_empty()
            && self.gaps.is_empty()
            && self.segments.iter().all(SegmentReport::is_ok)
    }

    /// True when the stream is fine as it is now (after repair, if repair ran).
    pub fn is_ok_now(&self) -> bool {
        match &self.after_repair {
            Some(after) => gaps(after).is_empty() && after.iter().all(SegmentReport::is_ok),
            None => self.is_ok(),
        }
    }
}

impl VerifyReport {
    /// True when every stream was fine before any repair.
    pub fn is_ok(&self) -> bool {
        self.streams.iter().all(StreamReport::is_ok)
    }

    /// True when every stream is fine now (after repair, if it ran): the CLI's exit status.
    pub fn is_ok_now(&self) -> bool {
        self.streams.iter().all(StreamReport::is_ok_now)
    }

    /// Records in all valid segments.
    pub fn records(&self) -> u64 {
        self.streams
            .iter()
            .flat_map(|s| s.after_repair.as_ref().unwrap_or(&s.segments))
            .map(|s| s.records)
            .sum()
    }
}

/// Checks a data directory (a directory of stream directories, or one stream directory):
/// every record of every segment (length, CRC, consecutive offsets, monotone timestamps),
/// every index file, and that no segment is missing. With `repair`, streams with problems
/// are opened through recovery (which marks damaged records lost and keeps the rest, cuts
/// torn tails and rebuilds indexes) after each missing segment is replaced by one that
/// marks its offsets lost, and checked again.
///
/// # Errors
/// `Io` when the directory or a file cannot be read, or repair cannot write.
pub fn verify(dir: &Path, repair: bool) -> Result<VerifyReport, LogError> {
    let mut streams = Vec::new();
    for stream in stream_dirs(dir)? {
        let mut report = check_stream(&stream)?;
        if repair && !report.is_ok() {
            repair_stream(&stream, &report)?;
            let (log, recovery) = Log::open(repair_options(&stream, &report))?;
            drop(log);
            report.repair = Some(recovery);
            report.after_repair = Some(check_stream(&stream)?.segments);
        }
        streams.push(report);
    }
    Ok(VerifyReport { streams })
}

fn stream_dirs(dir: &Path) -> Result<Vec<PathBuf>, LogError> {
    if !list_segments(dir)?.0.is_empty() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(LogError::io("read directory", dir))? {
        let path = entry.map_err(LogError::io("read directory", dir))?.path();
        if path.is_dir() && !list_segments(&path)?.0.is_empty() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

fn check_stream(dir: &Path) -> Result<StreamReport, LogError> {
    let (bases, temp_files) = list_segments(dir)?;
    let mut segments = Vec::with_capacity(bases.len());
    for (i, &base) in bases.iter().enumerate() {
        let next_base = bases.get(i + 1).copied();
        segments.push(check_segment(dir, base, next_base)?);
    }
    Ok(StreamReport {
        dir: dir.to_path_buf(),
        gaps: gaps(&segments),
        segments,
        temp_files,
        repair: None,
        after_repair: None,
    })
}

/// Offsets between one segment's end and the next one's base.
fn gaps(segments: &[SegmentReport]) -> Vec<(u64, u64)> {
    segments
        .windows(2)
        .filter(|w| w[0].next_offset < w[1].base_offset)
        .map(|w| (w[0].next_offset, w[1].base_offset))
        .collect()
}

fn check_segment(dir: &Path, base: u64, next_base: Option<u64>) -> Result<SegmentReport, LogError> {
    let file = log_path(dir, base);
    let data = fs::read(&file).map_err(LogError::io("read", &file))?;
    let s = scan(&data, base, next_base);
    let active = next_base.is_none();
    let idx = idx_path(dir, base);
    let index = match fs::read(&idx) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match next_base {
            None => IndexStatus::NotExpected,
            Some(next) if s.is_whole(base, next) && s.end < data.len() => IndexStatus::Unfinished,
            Some(_) => IndexStatus::Missing,
        },
        Err(e) => return Err(LogError::io("read", &idx)(e)),
        Ok(_) if active => IndexStatus::Unexpected,
        Ok(bytes) => match IndexFile::decode(&bytes) {
            Err(reason) => IndexStatus::Invalid(reason.to_string()),
            Ok(f) if f.data_len != data.len() as u64 => {
                IndexStatus::Invalid("data length differs from the file length".into())
            }
            // Damaged records cannot say what the index should hold; repair rebuilds it.
            Ok(_) if !s.lost.is_empty() || s.damage.is_some() => IndexStatus::Ok,
            Ok(f) => {
                let expected = IndexFile {
                    base,
                    count: s.count,
                    lost: s.marked_offsets(),
                    data_len: s.end as u64,
                    first_ts: s.first_ts,
                    last_ts: s.last_ts,
                    last_pos: s.last_pos as u64,
                    index: s.index.clone(),
                };
                if f == expected {
                    IndexStatus::Ok
                } else {
                    IndexStatus::Invalid("summary or entries differ from the records".into())
                }
            }
        },
    };
    let has = s.count > 0;
    Ok(SegmentReport {
        file,
        base_offset: base,
        active,
        records: s.records(),
        next_offset: base + s.count,
        lost: s
            .lost
            .iter()
            .map(|l| LostRange {
                position: l.pos as u64,
                bytes: (l.end_pos - l.pos) as u64,
                first_offset: l.first,
                end_offset: l.end,
                damage: l.damage.clone(),
            })
            .collect(),
        marked: s.marked.iter().map(|m| (m.first, m.end)).collect(),
        valid_bytes: s.end as u64,
        file_bytes: data.len() as u64,
        first_timestamp: has.then_some(s.first_ts),
        last_timestamp: has.then_some(s.last_ts),
        dropped_bytes: s.dropped_bytes(),
        padding_bytes: if active || s.damage.is_some() {
            0
        } else {
            (data.len() - s.end) as u64
        },
        damage: s.damage,
        index,
    })
}

/// Deletes the index files of damaged segments (so recovery scans them rather than trust
/// them), and puts a segment holding one loss marker in the place of each missing one.
fn repair_stream(dir: &Path, report: &StreamReport) -> Result<(), LogError> {
    for seg in &report.segments {
        let damaged = seg.damage.is_some() || !seg.lost.is_empty();
        let idx = idx_path(dir, seg.base_offset);
        if matches!(seg.index, IndexStatus::Invalid(_)) || (damaged && idx.exists()) {
            fs::remove_file(&idx).map_err(LogError::io("remove", &idx))?;
        }
    }
    for &(from, _) in &report.gaps {
        let ts = report
            .segments
            .iter()
            .take_while(|s| s.base_offset < from)
            .filter_map(|s| s.last_timestamp)
            .last()
            .unwrap_or(0);
        let mut m = vec![0u8; crate::format::RECORD_HEADER];
        crate::format::encode_marker(&mut m, from, ts);
        let path = log_path(dir, from);
        fs::write(&path, &m).map_err(LogError::io("write", &path))?;
    }
    Ok(())
}

/// Mmap storage keeping the active segment's current size.
fn repair_options(dir: &Path, report: &StreamReport) -> LogOptions {
    let active_len = report.segments.last().map_or(0, |s| s.file_bytes);
    LogOptions {
        storage: Storage::Mmap,
        dir: Some(dir.to_path_buf()),
        segment_bytes: if active_len > 0 {
            active_len
        } else {
            LogOptions::default().segment_bytes
        },
        ..LogOptions::default()
    }
}

impl fmt::Display for SegmentReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.file.file_name().map(|n| n.to_string_lossy());
        write!(
            f,
            "{} {}: offsets {}..{}, {} of {} bytes valid",
            name.unwrap_or_default(),
            if self.active { "(active)" } else { "(sealed)" },
            self.base_offset,
            self.next_offset,
            self.valid_bytes,
            self.file_bytes
        )?;
        if self.next_offset - self.base_offset != self.records {
            write!(f, " ({} intact records)", self.records)?;
        }
        match &self.index {
            IndexStatus::Ok | IndexStatus::NotExpected => {}
            IndexStatus::Missing => write!(f, "; index missing")?,
            IndexStatus::Unfinished => write!(
                f,
                "; seal not finished (zeros after the data, no index yet)"
            )?,
            IndexStatus::Unexpected => write!(f, "; stale index on the active segment")?,
            IndexStatus::Invalid(r) => write!(f, "; index invalid: {r}")?,
        }
        for l in &self.lost {
            write!(
                f,
                "; DAMAGED at byte {}: {} (offsets {}..{}, {} bytes; the records after it are intact)",
                l.position, l.damage, l.first_offset, l.end_offset, l.bytes
            )?;
        }
        for (a, b) in &self.marked {
            write!(f, "; offsets {a}..{b} marked lost earlier")?;
        }
        if let Some(d) = &self.damage {
            write!(
                f,
                "; DAMAGED at byte {}: {d} ({} bytes would be dropped)",
                self.valid_bytes, self.dropped_bytes
            )?;
        }
        if self.padding_bytes > 0 {
            write!(
                f,
                "; {} bytes of padding after the data",
                self.padding_bytes
            )?;
        }
        if !self.active && self.next_offset == self.base_offset {
            write!(f, "; empty sealed segment")?;
        }
        Ok(())
    }
}

impl fmt::Display for StreamReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.is_ok() { "ok" } else { "PROBLEMS" };
        write!(
            f,
            "{}: {} segments, {state}",
            self.dir.display(),
            self.segments.len()
        )?;
        for s in &self.segments {
            write!(f, "\n  {s}")?;
        }
        for (a, b) in &self.gaps {
            write!(
                f,
                "\n  MISSING: offsets {a}..{b} (the segment file that held them is gone)"
            )?;
        }
        for t in &self.temp_files {
            write!(f, "\n  leftover temporary file {}", t.display())?;
        }
        if let Some(r) = &self.repair {
            write!(f, "\n  repair: {r}")?;
            let ok = if self.is_ok_now() {
                "ok"
            } else {
                "STILL BROKEN"
            };
            write!(f, "\n  after repair: {ok}")?;
        }
        Ok(())
    }
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.streams {
            writeln!(f, "{s}")?;
        }
        let state = if self.is_ok_now() {
            "ok"
        } else {
            "problems found"
        };
        write!(
            f,
            "{} streams, {} records: {state}",
            self.streams.len(),
            self.records()
        )
    }
}
