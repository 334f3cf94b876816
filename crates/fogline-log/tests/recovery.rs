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

/// Reopens, checks that exactly records `0..keep` are served and intact, and returns the report.
fn reopen_expect(dir: &Path, keep: u64) -> fogline_log::RecoveryReport {
    let (mut log, report) = Log::open(file_opts(dir, Storage::Mmap, 1 << 16)).unwrap();
    let all = read_all(&log);
    assert_eq!(all.len() as u64, keep, "{report}");
    all.iter().for_each(|r| check(r, r.offset));
    assert_eq!(log.next_offset(), keep);
    // The log keeps working: append, reopen, and the new record is there and clean.
    fill(&mut log, keep, keep + 1);
    drop(log);
    let (log, again) = Log::open(file_opts(dir, Storage::Mmap, 1 << 16)).unwrap();
    assert!(again.is_clean(), "second open after repair: {again}");
    assert_eq!(read_all(&log).len() as u64, keep + 1);
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
        let report = reopen_expect(dir.path(), keep);
        let partial = &bytes[start..cut];
        if partial.iter().all(|&b| b == 0) || cut == end {
            assert!(report.truncations.is_empty(), "cut {cut}: {report}");
            continue;
        }
        assert_eq!(report.truncations.len(), 1, "cut {cut}: {report}");
        let t = &report.truncations[0];
        assert_eq!(t.position as usize, start, "cut {cut}");
        assert_eq!(t.first_dropped_offset, N - 1);
        let nonzero = partial.iter().rposition(|&b| b != 0).unwrap() + 1;
        assert_eq!(t.bytes_dropped as usize, nonzero, "cut {cut}");
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
        let report = reopen_expect(dir.path(), N - 1);
        assert_eq!(report.truncations.len(), 1, "byte {p}: {report}");
        let t = &report.truncations[0];
        assert_eq!(
            (t.position as usize, t.first_dropped_offset),
            (start, N - 1)
        );
        assert!(t.bytes_dropped > 0 && t.bytes_dropped as usize <= end - start);
    }
}

#[test]
fn corruption_in_the_middle_keeps_the_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let (bytes, starts) = one_segment(dir.path());
    for k in [0u64, 1, 17, N - 2] {
        let mut b = bytes.clone();
        b[starts[k as usize] + 20] ^= 0x01;
        fs::write(seg_file(dir.path(), 0), &b).unwrap();
        let report = reopen_expect(dir.path(), k);
        let t = &report.truncations[0];
        assert!(matches!(t.damage, Damage::BadCrc { .. }), "{report}");
        assert_eq!(t.position as usize, starts[k as usize]);
        assert_eq!(
            t.bytes_dropped as usize,
            starts[N as usize] - starts[k as usize]
        );
    }
}

#[test]
fn stale_record_after_the_end_is_zeroed_not_resurrected() {
    // Power loss can keep a later page and lose an earlier one: a valid record with the next
    // offset could sit beyond a zero gap. Recovery must zero it before new appends reach it.
    let dir = tempfile::tempdir().unwrap();
    let (mut bytes, starts) = one_segment(dir.path());
    let (a, b) = (starts[N as usize - 2], starts[N as usize - 1]);
    bytes[a..b].fill(0);
    fs::write(seg_file(dir.path(), 0), &bytes).unwrap();
    let (mut log, report) = Log::open(file_opts(dir.path(), Storage::Mmap, 1 << 16)).unwrap();
    assert_eq!(
        report.truncations[0].damage,
        Damage::TrailingGarbage,
        "{report}"
    );
    // Re-append record N-2 with the same bytes: record N-1 must not reappear.
    fill(&mut log, N - 2, N - 1);
    drop(log);
    let (log, _) = Log::open(file_opts(dir.path(), Storage::Mmap, 1 << 16)).unwrap();
    assert_eq!(log.next_offset(), N - 1);
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
fn torn_sealed_segment_is_cut_and_reindexed() {
    let dir = tempfile::tempdir().unwrap();
    let bases = many_segments(dir.path(), 100);
    assert!(bases.len() >= 4);
    let path = seg_file(dir.path(), bases[1]);
    let original = fs::read(&path).unwrap();
    let last_start = (bases[1]..bases[2] - 1).map(size).sum::<usize>();
    for cut in last_start..original.len() {
        fs::write(&path, &original[..cut]).unwrap();
        let (log, report) = Log::open(file_opts(dir.path(), Storage::Mmap, 1000)).unwrap();
        assert_eq!(
            report.gaps,
            vec![(bases[2] - 1, bases[2])],
            "cut {cut}: {report}"
        );
        assert_eq!(report.indexes_rebuilt, 1);
        let all = read_all(&log);
        all.iter().for_each(|r| check(r, r.offset));
        assert_eq!(all.len(), 99, "one record lost");
        assert!(all.iter().all(|r| r.offset != bases[2] - 1));
        drop(log);
        assert!(verify(dir.path(), false).unwrap().is_ok());
        fs::write(&path, &original).unwrap();
        fs::remove_file(dir.path().join(format!("{:020}.idx", bases[1]))).unwrap();
    }
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
    assert_eq!(s.segments[0].records, 2);
    assert!(matches!(s.segments[0].damage, Some(Damage::BadCrc { .. })));
    assert!(!s.temp_files.is_empty());
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains("bad_crc"), "{json}");

    // Open trusts segment 0 on its index; reads check its CRCs and refuse the damage.
    let (log, _) = Log::open(file_opts(dir.path(), Storage::Mmap, 1000)).unwrap();
    let got = log.read(0, 100, usize::MAX).unwrap();
    assert_eq!(got.len(), 2, "records before the damage are served");
    match log.read(2, 100, usize::MAX) {
        Err(LogError::Corrupt { offset, resume, .. }) => {
            assert_eq!((offset, resume), (2, bases[1]));
            assert_eq!(log.read(resume, 1, 1).unwrap()[0].offset, bases[1]);
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    drop(log);

    let repaired = verify(dir.path(), true).unwrap();
    assert!(!repaired.is_ok() && repaired.is_ok_now(), "{repaired}");
    assert!(verify(dir.path(), false).unwrap().is_ok());
    let (log, report) = Log::open(file_opts(dir.path(), Storage::Mmap, 1000)).unwrap();
    assert!(
        report.truncations.is_empty() && report.indexes_rebuilt == 0,
        "{report}"
    );
    let all = read_all(&log);
    all.iter().for_each(|r| check(r, r.offset));
    assert_eq!(all.len() as u64, 100 - (bases[1] - 2));
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
    assert_eq!(
        (rec.indexes_rebuilt, rec.truncations.len()),
        (1, 0),
        "{rec}"
    );
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
    let all = read_all(&log);
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
        let kept = read_all(&log).iter().filter(|r| r.offset < n).count() as u64;
        prop_assert!(kept <= n);
        for r in read_all(&log).iter().filter(|r| r.offset < n) {
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
fn a_time_lookup_across_damage_starts_at_the_damaged_segment() {
    let dir = tempfile::tempdir().unwrap();
    let bases = many_segments(dir.path(), 100);
    let path = seg_file(dir.path(), bases[0]);
    let mut b = fs::read(&path).unwrap();
    b[size(0) + size(1) + 40] ^= 4;
    fs::write(&path, &b).unwrap();
    let (log, _) = Log::open(file_opts(dir.path(), Storage::Mmap, 1000)).unwrap();
    // Record 3's time lies past the damaged record 2. The walk cannot get there: the answer
    // is the damaged segment's start, whose intact records a reader then gets (it went to
    // the end of the log before, skipping every later segment).
    let (ts3, ..) = rec(3);
    assert!(bases[1] > 3);
    assert_eq!(log.offset_for_time(ts3), bases[0]);
    // Lookups that do not cross the damage are unchanged.
    let (ts_later, ..) = rec(bases[2] + 1);
    assert_eq!(log.offset_for_time(ts_later), bases[2] + 1);
    assert_eq!(log.offset_for_time(rec(1).0), 1);
}
