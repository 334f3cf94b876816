//! Crash recovery: torn and corrupt tails at every byte, damaged sealed segments and indexes,
//! arbitrary bytes as segment files.

mod common;

use common::*;
use fogline_log::{verify, Damage, Log, LogError, Storage};
use proptest::prelude::*;
use std::fs;
use std::path::{Path, PathBuf};

const N: u64 = 40;

fn seg_file(dir: &Path, base: u64) -> PathBuf {
    dir.join(format!("{base:020}.log"))
}

/// A one-segment mmap log holding records 0..N; returns the file bytes and record starts.
fn one_segment(dir: &Path) -> (Vec<u8>, Vec<usize>) {
    let (mut log, _) = Log::open(file_opts(dir, Storage::Mmap, 1 << 16)).unwrap();
    fill(&mut log, 0, N);
    drop(log);
    let mut starts = vec![0usize];
    for i in 0..N {
        starts.push(starts[i as usize] + size(i));
    }
    (fs::read(seg_file(dir, 0)).unwrap(), starts)
}

/// Everything from the start, going on after offsets that hold no record: the records,
/// and the offsets the reads were told are lost (`Lost` or `Corrupt`).
fn read_around_losses(log: &Log) -> (Vec<fogline_log::Record>, Vec<u64>) {
    let (mut all, mut lost) = (Vec::new(), Vec::new());
    let mut from = 0;
    loop {
        match log.read(from, usize::MAX, usize::MAX) {
            Ok(got) if got.is_empty() => return (all, lost),
            Ok(got) => {
                from = got.last().unwrap().offset + 1;
                all.extend(got);
            }
            Err(e) => {
                let resume = e.resume().unwrap_or_else(|| panic!("{e}"));
                assert!(resume > from, "{e}");
                lost.extend(from..resume);
                from = resume;
            }
        }
    }
}

/// Reopens, checks that exactly records `0..n` but `lost` are served and intact (and that
/// reading a lost one says so), and returns the report.
fn reopen_expect(dir: &Path, n: u64, lost: &[u64]) -> fogline_log::RecoveryReport {
    let (mut log, report) = Log::open(file_opts(dir, Storage::Mmap, 1 << 16)).unwrap();
    let (all, missing) = read_around_losses(&log);
    let want: Vec<u64> = (0..n).filter(|o| !lost.contains(o)).collect();
    let got: Vec<u64> = all.iter().map(|r| r.offset).collect();
    assert_eq!(got, want, "{report}");
    assert_eq!(missing, lost, "{report}");
    all.iter().for_each(|r| check(r, r.offset));
    assert_eq!(log.next_offset(), n);
    assert_eq!(report.records, want.len() as u64);
    // The log keeps working: append, reopen, and the new record is there and clean.
    fill(&mut log, n, n + 1);
    drop(log);
    let (log, again) = Log::open(file_opts(dir, Storage::Mmap, 1 << 16)).unwrap();
    assert!(again.is_clean(), "second open after repair: {again}");
    assert_eq!(read_around_losses(&log).0.len(), want.len() + 1);
    report
}

#[test]
fn torn_tail_at_every_byte_of_the_last_record() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, starts) = one_segment(dir.path());
    let (start, end) = (starts[N as usize - 1], starts[N as usize]);
    for cut in start..=end {
        fs::write(seg_file(dir.path(), 0), &bytes[..cut]).unwrap();
        let keep = if cut == end { N } else { N - 1 };
        let report = reopen_expect(dir.path(), keep, &[]);
        let partial = &bytes[start..cut];
        if partial.iter().all(|&b| b == 0) || cut == end {
            assert!(report.repairs.is_empty(), "cut {cut}: {report}");
            continue;
        }
        assert_eq!(report.repairs.len(), 1, "cut {cut}: {report}");
        let t = &report.repairs[0];
        assert_eq!(t.position as usize, start, "cut {cut}");
        assert_eq!((t.first_offset, t.end_offset), (N - 1, None));
        let nonzero = partial.iter().rposition(|&b| b != 0).unwrap() + 1;
        assert_eq!(t.bytes as usize, nonzero, "cut {cut}");
    }
}

#[test]
fn corrupt_byte_anywhere_in_the_last_record() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, starts) = one_segment(dir.path());
    let (start, end) = (starts[N as usize - 1], starts[N as usize]);
    for p in start..end {
        let mut b = bytes.clone();
        b[p] ^= 0xff;
        fs::write(seg_file(dir.path(), 0), &b).unwrap();
        let report = reopen_expect(dir.path(), N - 1, &[]);
        assert_eq!(report.repairs.len(), 1, "byte {p}: {report}");
        let t = &report.repairs[0];
        assert_eq!((t.position as usize, t.first_offset), (start, N - 1));
        assert!(t.bytes > 0 && t.bytes as usize <= end - start);
    }
}

/// Issue 31, finding 3: one damaged record used to cost every record after it in its
/// segment. Now only the damaged one is dropped, at any byte of it, and a reader asking for
/// it is told.
#[test]
fn corruption_in_the_middle_loses_only_the_damaged_record() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, starts) = one_segment(dir.path());
    for k in [0u64, 1, 17, N - 2] {
        let (a, b) = (starts[k as usize], starts[k as usize + 1]);
        for p in a..b {
            let mut bad = bytes.clone();
            bad[p] ^= 0x01;
            fs::write(seg_file(dir.path(), 0), &bad).unwrap();
            let report = reopen_expect(dir.path(), N, &[k]);
            assert_eq!(report.repairs.len(), 1, "byte {p}: {report}");
            let t = &report.repairs[0];
            assert_eq!((t.first_offset, t.end_offset), (k, Some(k + 1)), "{report}");
            assert_eq!((t.position as usize, t.bytes as usize), (a, b - a));
            assert!(report.lost_data());
        }
    }
}

#[test]
fn zeroed_records_in_the_middle_cost_only_themselves() {
    // Power loss can keep a later page and lose an earlier one: the records after the
    // zeros are valid and kept; the zeroed ones are marked lost.
    let dir = tempfile::tempdir().unwrap();
    let (mut bytes, starts) = one_segment(dir.path());
    bytes[starts[10]..starts[13]].fill(0);
    fs::write(seg_file(dir.path(), 0), &bytes).unwrap();
    let report = reopen_expect(dir.path(), N, &[10, 11, 12]);
    assert_eq!(report.repairs[0].damage, Damage::Zeroed, "{report}");
}

/// A mmap log with several sealed segments; returns the segment bases.
fn many_segments(dir: &Path, n: u64) -> Vec<u64> {
    let (mut log, _) = Log::open(file_opts(dir, Storage::Mmap, 1000)).unwrap();
    fill(&mut log, 0, n);
    drop(log);
    let mut bases: Vec<u64> = fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".log").map(|s| s.parse().unwrap())
        })
        .collect();
    bases.sort();
    bases
}

#[test]
fn torn_sealed_segment_keeps_its_offsets_and_marks_the_torn_one_lost() {
    let dir = tempfile::tempdir().unwrap();
    let bases = many_segments(dir.path(), 100);
    assert!(bases.len() >= 4);
    let path = seg_file(dir.path(), bases[1]);
    let original = fs::read(&path).unwrap();
    let last_start = (bases[1]..bases[2] - 1).map(size).sum::<usize>();
    for cut in last_start..original.len() {
        fs::write(&path, &original[..cut]).unwrap();
        let (log, report) = Log::open(file_opts(dir.path(), Storage::Mmap, 1000)).unwrap();
        assert!(report.gaps.is_empty(), "cut {cut}: {report}");
        assert_eq!(report.indexes_rebuilt, 1);
        let r = &report.repairs[..];
        assert_eq!(r.len(), 1, "{report}");
        assert_eq!(
            (r[0].first_offset, r[0].end_offset),
            (bases[2] - 1, Some(bases[2]))
        );
        let (all, lost) = read_around_losses(&log);
        all.iter().for_each(|r| check(r, r.offset));
        assert_eq!((all.len(), lost), (99, vec![bases[2] - 1]));
        drop(log);
        let v = verify(dir.path(), false).unwrap();
        assert!(v.is_ok(), "{v}");
        assert!(v.to_string().contains("marked lost earlier"), "{v}");
        fs::write(&path, &original).unwrap();
        fs::remove_file(dir.path().join(format!("{:020}.idx", bases[1]))).unwrap();
    }
}

/// Issue 31, finding 3, as found: 16 flipped bytes in the middle of a sealed 1 MiB
/// segment. Readers get every intact record and are told about the damaged one; `verify`
/// fails; `verify --repair` drops only the damaged record.
#[test]
fn flipped_bytes_in_a_sealed_segment_cost_one_record() {
    let dir = tempfile::tempdir().unwrap();
    let opts = file_opts(dir.path(), Storage::Mmap, 1 << 20);
    let (mut log, _) = Log::open(opts.clone()).unwrap();
    let payload = [7u8; 200];
    let mut n = 0;
    while log.stats().segments < 2 {
        log.append(n, b"site/a", b"", &payload).unwrap();
        n += 1;
    }
    log.commit().unwrap();
    drop(log);
    let path = seg_file(dir.path(), 0);
    let mut b = fs::read(&path).unwrap();
    let mid = b.len() / 2;
    for x in &mut b[mid..mid + 16] {
        *x ^= 0x5a;
    }
    fs::write(&path, &b).unwrap();
    let record = (mid / 242) as u64;

    let (log, _) = Log::open(opts.clone()).unwrap();
    let (all, lost) = read_around_losses(&log);
    assert_eq!(lost, vec![record]);
    assert_eq!(all.len() as u64, n - 1);
    match log.read(record, 10, usize::MAX) {
        Err(LogError::Corrupt { offset, resume, .. }) => {
            assert_eq!((offset, resume), (record, record + 1))
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    drop(log);

    let v = verify(dir.path(), false).unwrap();
    assert!(!v.is_ok(), "{v}");
    let seg = &v.streams[0].segments[0];
    assert_eq!(seg.lost.len(), 1, "{v}");
    assert_eq!(
        (seg.lost[0].first_offset, seg.lost[0].end_offset),
        (record, record + 1)
    );
    let repaired = verify(dir.path(), true).unwrap();
    assert!(repaired.is_ok_now(), "{repaired}");
    assert_eq!(repaired.records(), n - 1);
    let (log, report) = Log::open(opts).unwrap();
    assert!(report.is_clean(), "{report}");
    let (all, lost) = read_around_losses(&log);
    assert_eq!((all.len() as u64, lost), (n - 1, vec![record]));
    match log.read(record, 10, usize::MAX) {
        Err(LogError::Lost {
            offset,
            first,
            resume,
        }) => {
            assert_eq!((offset, first, resume), (record, record, record + 1))
        }
        other => panic!("expected Lost, got {other:?}"),
    }
}

/// A sealed segment deleted behind the log's back: `verify` fails (it used to pass with a
/// note), a reader asking for its offsets is told, and `verify --repair` puts a segment
/// marking them lost in its place.
#[test]
fn a_deleted_sealed_segment_fails_verify() {
    let dir = tempfile::tempdir().unwrap();
    let bases = many_segments(dir.path(), 100);
    fs::remove_file(seg_file(dir.path(), bases[1])).unwrap();
    fs::remove_file(dir.path().join(format!("{:020}.idx", bases[1]))).unwrap();
    let v = verify(dir.path(), false).unwrap();
    assert!(!v.is_ok() && !v.is_ok_now(), "{v}");
    assert_eq!(v.streams[0].gaps, vec![(bases[1], bases[2])]);
    assert!(v.to_string().contains("MISSING"), "{v}");

    let (log, report) = Log::open(file_opts(dir.path(), Storage::Mmap, 1000)).unwrap();
    assert!(report.lost_data() && !report.is_clean(), "{report}");
    let got = log.read(0, usize::MAX, usize::MAX).unwrap();
    assert_eq!(
        got.last().unwrap().offset,
        bases[1] - 1,
        "stops before the gap"
    );
    match log.read(bases[1] + 1, 1, 1) {
        Err(LogError::Lost {
            offset,
            first,
            resume,
        }) => {
            assert_eq!((offset, first, resume), (bases[1] + 1, bases[1], bases[2]))
        }
        other => panic!("expected Lost, got {other:?}"),
    }
    drop(log);

    let repaired = verify(dir.path(), true).unwrap();
    assert!(repaired.is_ok_now(), "{repaired}");
    assert!(verify(dir.path(), false).unwrap().is_ok());
    let (log, report) = Log::open(file_opts(dir.path(), Storage::Mmap, 1000)).unwrap();
    assert!(report.is_clean(), "{report}");
    let (all, lost) = read_around_losses(&log);
    assert_eq!(lost, (bases[1]..bases[2]).collect::<Vec<_>>());
    assert_eq!(all.len() as u64, 100 - (bases[2] - bases[1]));
}

#[test]
fn verify_finds_what_open_trusts_and_repair_fixes_it() {
    let dir = tempfile::tempdir().unwrap();
    let bases = many_segments(dir.path(), 100);
    let clean = verify(dir.path(), false).unwrap();
    assert!(clean.is_ok(), "{clean}");
    assert_eq!(clean.records(), 100);
    // A flipped byte inside a sealed segment's middle record: open trusts the index (first
    // and last records check out) but verify reads every record.
    let path = seg_file(dir.path(), bases[0]);
    let mut b = fs::read(&path).unwrap();
    b[size(0) + size(1) + 40] ^= 4;
    fs::write(&path, &b).unwrap();
    let idx2 = dir.path().join(format!("{:020}.idx", bases[2]));
    let mut idx = fs::read(&idx2).unwrap();
    idx[20] ^= 1;
    fs::write(&idx2, &idx).unwrap();
    fs::write(dir.path().join("00000000000000000000.idx.tmp"), b"x").unwrap();
    let report = verify(dir.path(), false).unwrap();
    assert!(!report.is_ok() && !report.is_ok_now());
    let text = report.to_string();
    assert!(
        text.contains("DAMAGED") && text.contains("index invalid"),
        "{text}"
    );
    let s = &report.streams[0];
    assert_eq!(s.segments[0].records, bases[1] - 1);
    assert!(matches!(
        s.segments[0].lost[0].damage,
        Damage::BadCrc { .. }
    ));
    assert!(!s.temp_files.is_empty());
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains("bad_crc"), "{json}");

    // Open trusts segment 0 on its index; reads check its CRCs and refuse the damage.
    let (log, _) = Log::open(file_opts(dir.path(), Storage::Mmap, 1000)).unwrap();
    let got = log.read(0, 100, usize::MAX).unwrap();
    assert_eq!(got.len(), 2, "records before the damage are served");
    match log.read(2, 100, usize::MAX) {
        Err(LogError::Corrupt { offset, resume, .. }) => {
            assert_eq!((offset, resume), (2, 3));
            assert_eq!(log.read(resume, 1, 1).unwrap()[0].offset, 3);
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    drop(log);

    let repaired = verify(dir.path(), true).unwrap();
    assert!(!repaired.is_ok() && repaired.is_ok_now(), "{repaired}");
    assert!(verify(dir.path(), false).unwrap().is_ok());
    let (log, report) = Log::open(file_opts(dir.path(), Storage::Mmap, 1000)).unwrap();
    assert!(report.is_clean(), "{report}");
    let (all, lost) = read_around_losses(&log);
    all.iter().for_each(|r| check(r, r.offset));
    assert_eq!((all.len(), lost), (99, vec![2]));
}

#[test]
fn index_with_valid_crc_but_wrong_summary_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let bases = many_segments(dir.path(), 60);
    let idx = dir.path().join(format!("{:020}.idx", bases[0]));
    let mut b = fs::read(&idx).unwrap();
    let last_ts = u64::from_le_bytes(b[40..48].try_into().unwrap());
    b[40..48].copy_from_slice(&(last_ts + 1).to_le_bytes());
    let body = b.len() - 4;
    let crc = crc32fast::hash(&b[..body]);
    b[body..].copy_from_slice(&crc.to_le_bytes());
    fs::write(&idx, &b).unwrap();
    let report = verify(dir.path(), false).unwrap();
    let status = &report.streams[0].segments[0].index;
    assert!(
        matches!(status, fogline_log::IndexStatus::Invalid(_)),
        "{report}"
    );
    let (log, rec) = Log::open(file_opts(dir.path(), Storage::Mmap, 1000)).unwrap();
    assert_eq!((rec.indexes_rebuilt, rec.repairs.len()), (1, 0), "{rec}");
    assert_eq!(read_all(&log).len(), 60);
    drop(log);
    assert!(verify(dir.path(), false).unwrap().is_ok());
}

#[test]
fn verify_walks_a_directory_of_streams() {
    let root = tempfile::tempdir().unwrap();
    for name in ["a", "b"] {
        let (mut log, _) =
            Log::open(file_opts(&root.path().join(name), Storage::Fsync, 4096)).unwrap();
        fill(&mut log, 0, 30);
    }
    fs::create_dir(root.path().join("not-a-stream")).unwrap();
    let report = verify(root.path(), false).unwrap();
    assert_eq!(report.streams.len(), 2);
    assert_eq!(report.records(), 60);
    assert!(report.is_ok(), "{report}");
}

#[test]
fn huge_or_foreign_file_names_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "18446744073709551615.log",
        "99999999999999999999.log",
        "1.log",
        "x.log",
    ] {
        fs::write(dir.path().join(name), b"\x40\0\0\0garbage").unwrap();
    }
    let (mut log, report) = Log::open(file_opts(dir.path(), Storage::Mmap, 4096)).unwrap();
    assert!(report.is_clean(), "{report}");
    fill(&mut log, 0, 3);
    assert_eq!(read_all(&log).len(), 3);
    assert!(dir.path().join("x.log").exists());
}

#[test]
fn fuzz_regressions() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        common::recover_input::run(&fs::read(&path).unwrap());
    }
}

fn open_never_fails(dir: &Path) {
    let (mut log, report) = Log::open(file_opts(dir, Storage::Mmap, 4096)).unwrap();
    let all = read_around_losses(&log).0;
    assert_eq!(all.len() as u64, report.records);
    for (w, r) in all.windows(2).zip(1..) {
        assert!(
            w[0].offset < w[1].offset && w[0].timestamp <= w[1].timestamp,
            "{r}"
        );
    }
    let _ = log.offset_for_time(u64::MAX / 2);
    let next = log.next_offset();
    assert_eq!(log.append(0, b"t", b"", b"after").unwrap(), next);
    log.commit().unwrap();
    drop(log);
    let v = verify(dir, false).unwrap();
    assert!(v.is_ok(), "after open: {v}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn fuzz_harness_on_arbitrary_input(data in proptest::collection::vec(any::<u8>(), 0..800)) {
        common::recover_input::run(&data);
    }

    #[test]
    fn fuzz_harness_on_damaged_valid_segment(n in 1u64..30, flips in proptest::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..4), cut in any::<prop::sample::Index>(), sealed in any::<bool>()) {
        // Mostly-valid inputs reach deeper than random bytes.
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = Log::open(file_opts(dir.path(), Storage::Mmap, 1 << 20)).unwrap();
        fill(&mut log, 0, n);
        let summary = log.stats();
        drop(log);
        let mut body = fs::read(seg_file(dir.path(), 0)).unwrap();
        body.truncate(summary.bytes as usize);
        for (at, x) in flips {
            let i = at.index(body.len());
            body[i] ^= x;
        }
        let end = cut.index(body.len() + 1);
        let mut data = vec![u8::from(sealed), 255];
        data.extend_from_slice(&body[..end]);
        common::recover_input::run(&data);
    }

    #[test]
    fn arbitrary_bytes_as_active_segment(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let dir = tempfile::tempdir().unwrap();
        fs::write(seg_file(dir.path(), 0), &bytes).unwrap();
        open_never_fails(dir.path());
    }

    #[test]
    fn valid_prefix_then_garbage(n in 0u64..20, garbage in proptest::collection::vec(any::<u8>(), 0..200), sealed in any::<bool>()) {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = Log::open(file_opts(dir.path(), Storage::Mmap, 4096)).unwrap();
        fill(&mut log, 0, n);
        drop(log);
        let path = seg_file(dir.path(), 0);
        let mut b = fs::read(&path).unwrap();
        let end: usize = (0..n).map(size).sum();
        b.truncate(end);
        b.extend_from_slice(&garbage);
        fs::write(&path, &b).unwrap();
        if sealed {
            // Make it a sealed segment with a random index file next to it.
            fs::write(dir.path().join("00000000000000000000.idx"), &garbage).unwrap();
            fs::write(seg_file(dir.path(), 1000), b"").unwrap();
        }
        open_never_fails(dir.path());
        let (log, _) = Log::open(file_opts(dir.path(), Storage::Mmap, 4096)).unwrap();
        let all = read_around_losses(&log).0;
        let kept = all.iter().filter(|r| r.offset < n).count() as u64;
        prop_assert!(kept <= n);
        for r in all.iter().filter(|r| r.offset < n) {
            check(r, r.offset);
        }
    }
}

/// A segment file left half-made by a crash during its creation (`BASE.log.tmp`) is removed
/// on open and reported; the log's records are untouched.
#[test]
fn a_half_made_segment_file_is_removed_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let opts = file_opts(dir.path(), Storage::Mmap, 1 << 20);
    {
        let (mut log, _) = Log::open(opts.clone()).unwrap();
        log.append(1, b"t", b"", b"kept").unwrap();
        log.commit().unwrap();
    }
    let tmp = dir.path().join("00000000000000000001.log.tmp");
    fs::write(&tmp, vec![0u8; 4096]).unwrap();
    let (log, report) = Log::open(opts).unwrap();
    assert!(!tmp.exists());
    assert_eq!(report.removed, vec![tmp]);
    assert_eq!(log.next_offset(), 1);
}

#[test]
fn a_time_lookup_across_damage_finds_the_records_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let bases = many_segments(dir.path(), 100);
    let path = seg_file(dir.path(), bases[0]);
    let mut b = fs::read(&path).unwrap();
    b[size(0) + size(1) + 40] ^= 4;
    fs::write(&path, &b).unwrap();
    let (log, _) = Log::open(file_opts(dir.path(), Storage::Mmap, 1000)).unwrap();
    // Record 3's time lies past the damaged record 2: the walk finds record 3 again after
    // the damage (it answered with the segment's start before, and with the end of the log
    // before that).
    let (ts3, ..) = rec(3);
    assert!(bases[1] > 3);
    assert_eq!(log.offset_for_time(ts3), 3);
    // Lookups that do not cross the damage are unchanged.
    let (ts_later, ..) = rec(bases[2] + 1);
    assert_eq!(log.offset_for_time(ts_later), bases[2] + 1);
    assert_eq!(log.offset_for_time(rec(1).0), 1);
}

/// A crash between a roll and its seal's file work (done on the log's housekeeping thread)
/// leaves a sealed segment at its full preallocated length, zeros after its data, and no
/// index. Nothing is damaged: the next open cuts the file, writes the index, reports no
/// repair, and every record is there; the open after that trusts the index.
#[test]
fn a_seal_cut_short_by_a_crash_is_finished_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let bases = many_segments(dir.path(), 100);
    assert!(bases.len() >= 4);
    let path = seg_file(dir.path(), bases[1]);
    let data_len = fs::metadata(&path).unwrap().len();
    fs::remove_file(dir.path().join(format!("{:020}.idx", bases[1]))).unwrap();
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(4096)
        .unwrap();
    let v = verify(dir.path(), false).unwrap();
    assert!(v.is_ok(), "an unfinished seal is not a problem: {v}");
    assert_eq!(
        v.streams[0].segments[1].index,
        fogline_log::IndexStatus::Unfinished
    );
    let (log, report) = Log::open(file_opts(dir.path(), Storage::Mmap, 1000)).unwrap();
    assert!(
        report.repairs.is_empty() && report.gaps.is_empty(),
        "{report}"
    );
    assert_eq!(report.indexes_rebuilt, 1, "{report}");
    assert_eq!(
        fs::metadata(&path).unwrap().len(),
        data_len,
        "cut to its data"
    );
    let (all, lost) = read_around_losses(&log);
    assert_eq!((all.len(), lost.len()), (100, 0));
    all.iter().for_each(|r| check(r, r.offset));
    drop(log);
    let (_, again) = Log::open(file_opts(dir.path(), Storage::Mmap, 1000)).unwrap();
    assert!(again.is_clean(), "{again}");
    assert_eq!(again.scanned, 1, "only the active segment: {again}");
}
