//! The recovery fuzz harness, shared by `fuzz/fuzz_targets/recover.rs` and the proptest in
//! `tests/recovery.rs` so stable CI runs the same entry point.
//!
//! Input: `flags, cut, body...`. With `flags & 1` the body is split at `cut/256` of its length
//! into a sealed segment `0.log` and its index `0.idx`, followed by an empty active segment;
//! otherwise the whole body is the active segment. The log must open, serve only consistent
//! records, accept appends, and pass `verify` afterwards.

use fogline_log::{verify, Log, LogError, LogOptions, Storage};
use std::fs;

/// Runs one input; panics on any broken invariant.
pub fn run(data: &[u8]) {
    let (flags, cut, body) = match data {
        [f, c, rest @ ..] => (*f, *c as usize, rest),
        _ => (0, 0, data),
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let seg = |base: u64| dir.path().join(format!("{base:020}.log"));
    if flags & 1 == 1 {
        let at = body.len() * cut / 256;
        fs::write(seg(0), &body[..at]).expect("write segment");
        fs::write(dir.path().join(format!("{:020}.idx", 0)), &body[at..]).expect("write index");
        fs::write(seg(1_000_000), b"").expect("write segment");
    } else {
        fs::write(seg(0), body).expect("write segment");
    }
    // The read-only check must cope with anything.
    let before = verify(dir.path(), false).expect("verify");
    let opts = LogOptions {
        storage: Storage::Mmap,
        dir: Some(dir.path().to_path_buf()),
        segment_bytes: 4096,
        ..LogOptions::default()
    };
    let (log, report) = Log::open(opts.clone()).expect("open never refuses");
    if before.is_ok() {
        assert!(
            report.repairs.is_empty(),
            "verify ok but open repaired: {report}"
        );
    }
    let (mut log, report) = match read_everything(&log) {
        // Open trusts a sealed segment on its index; the damage verify saw is refused on read.
        Err(LogError::Corrupt { .. }) => {
            assert!(!before.is_ok(), "read refused data that verify accepted");
            drop(log);
            assert!(verify(dir.path(), true).expect("repair").is_ok_now());
            Log::open(opts.clone()).expect("open after repair")
        }
        _ => (log, report),
    };
    let all = read_everything(&log).expect("read");
    assert_eq!(all.len() as u64, report.records, "{report}");
    assert_eq!(all.len() as u64, log.stats().records);
    for w in all.windows(2) {
        assert!(w[0].offset < w[1].offset && w[0].timestamp <= w[1].timestamp);
    }
    for r in &all {
        assert_eq!(log.read(r.offset, 1, 0).expect("read one")[0], *r);
        assert!(log.offset_for_time(r.timestamp) <= r.offset);
    }
    let next = log.next_offset();
    assert_eq!(log.append(0, b"t", b"h", b"after").expect("append"), next);
    log.commit().expect("commit");
    drop(log);
    let after = verify(dir.path(), false).expect("verify");
    assert!(after.is_ok(), "after open: {after}");
    let (log, again) = Log::open(opts).expect("reopen");
    assert!(again.is_clean(), "second open: {again}");
    assert_eq!(log.next_offset(), next + 1);
}

/// Reads from the start to the end, in chunks, going on after offsets marked lost.
fn read_everything(log: &Log) -> Result<Vec<fogline_log::Record>, LogError> {
    let mut all: Vec<fogline_log::Record> = Vec::new();
    let mut from = 0;
    loop {
        let got = match log.read(from, 3, usize::MAX) {
            Err(LogError::Lost { offset, resume, .. }) => {
                assert!(offset >= from && resume > offset, "{offset} {resume}");
                from = resume;
                continue;
            }
            other => other?,
        };
        let Some(last) = got.last() else {
            return Ok(all);
        };
        from = last.offset + 1;
        all.extend(got);
    }
}
