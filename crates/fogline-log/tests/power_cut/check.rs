//! What a log recovered after a power cut must hold, and the checks of it.

use crate::rng::Rng;
use fogline_log::{verify, Log, LogError, LogOptions, Record, Storage};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

/// Segment size: a few pages, so records span pages and segments roll often.
pub const SEGMENT: u64 = 12 << 10;
/// Retention keeps about three segments.
pub const RETENTION: u64 = 30 << 10;

/// Fsync storage in `dir`, as the workload uses it.
/// Options of the stream under test; `inline`: its housekeeping on the appending thread.
pub fn opts(dir: &Path, inline: bool) -> LogOptions {
    LogOptions {
        storage: Storage::Fsync,
        dir: Some(dir.to_path_buf()),
        segment_bytes: SEGMENT,
        retention_bytes: Some(RETENTION),
        inline_housekeeping: inline,
        ..LogOptions::default()
    }
}

/// Record `offset`: (timestamp, topic, headers, payload). An offset always gets the same
/// record, also when recovery gives it out again; about one in 150 is larger than a segment.
pub fn record(offset: u64) -> (u64, Vec<u8>, Vec<u8>, Vec<u8>) {
    let h = Rng::new(offset).next();
    let topic = format!("site/dev{}", h % 5).into_bytes();
    let headers = vec![offset as u8 ^ 0x5a; (h >> 8) as usize % 12];
    let len = if h % 151 == 0 {
        SEGMENT + 3000 + (h >> 20) % 3000
    } else {
        (h >> 20) % 300
    };
    let payload = (0..len)
        .map(|j| (offset.wrapping_mul(131) ^ j.wrapping_mul(7) ^ (j >> 8)) as u8)
        .collect();
    (1_000 + offset * 10, topic, headers, payload)
}

/// What a log opened on a disk left by a power cut must hold.
#[derive(Clone, Debug)]
pub struct Expect {
    /// Offsets `[floor, acked)` were made visible (so durable) and not dropped by retention:
    /// every one not in `lost` must be served, intact.
    pub floor: u64,
    pub acked: u64,
    /// Offsets a recovery marked lost (none of them was acknowledged).
    pub lost: Arc<BTreeSet<u64>>,
    /// A purge that returned dropped every offset below this: none may come back.
    pub purged_below: u64,
    /// No offset at or past this was ever appended.
    pub appended: u64,
    /// Offsets given out (acknowledged or not) when the step began.
    pub given: u64,
}

/// Counts over all images checked, to show that the cuts cut.
#[derive(Debug, Default)]
pub struct Seen {
    /// Images opened.
    pub images: usize,
    /// Images whose recovery repaired records (a torn tail, damage in the data).
    pub repaired: usize,
    /// Images whose recovery rebuilt an index.
    pub reindexed: usize,
    /// Images that lacked records appended before their step but not acknowledged.
    pub lost_unacked: usize,
}

/// Checks an open log against `exp`; returns the offsets reads said were lost.
pub fn check_log(log: &Log, exp: &Expect, rng: &mut Rng, what: &str) -> Vec<u64> {
    let (records, lost) = read_everything(log, rng, what);
    let mut served = BTreeSet::new();
    for r in &records {
        assert!(
            r.offset < exp.appended,
            "{what}: record {} was never appended",
            r.offset
        );
        assert!(
            r.offset >= exp.purged_below,
            "{what}: record {} came back after a purge that returned",
            r.offset
        );
        let (ts, topic, headers, payload) = record(r.offset);
        let intact = r.timestamp == ts
            && r.topic[..] == topic[..]
            && r.headers[..] == headers[..]
            && r.payload[..] == payload[..];
        assert!(
            intact,
            "{what}: record {} is not what was appended",
            r.offset
        );
        served.insert(r.offset);
    }
    let missing: Vec<u64> = (exp.floor..exp.acked)
        .filter(|o| !served.contains(o) && !exp.lost.contains(o))
        .collect();
    assert!(
        missing.is_empty(),
        "{what}: acknowledged records missing: {} of them, from {} ({} lost on reading; \
         offsets now {}..{})",
        missing.len(),
        missing[0],
        lost.len(),
        log.first_offset(),
        log.next_offset()
    );
    assert!(log.next_offset() >= exp.acked, "{what}: offsets went back");
    assert_eq!(
        log.committed_offset(),
        log.next_offset(),
        "{what}: recovered records are not all visible"
    );
    if !records.is_empty() {
        let r = &records[rng.below(records.len() as u64) as usize];
        let one = log
            .read(r.offset, 1, 0)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(one.first(), Some(r), "{what}: reading {} alone", r.offset);
        assert!(
            log.offset_for_time(r.timestamp) <= r.offset,
            "{what}: by time"
        );
    }
    lost
}

/// Everything from the first offset, in chunks of random size, going on after offsets
/// without a record: the records, and the offsets reads said were lost.
fn read_everything(log: &Log, rng: &mut Rng, what: &str) -> (Vec<Record>, Vec<u64>) {
    let (mut all, mut lost) = (Vec::<Record>::new(), Vec::new());
    let mut from = 0;
    loop {
        match log.read(from, rng.range(1, 40) as usize, usize::MAX) {
            Ok(got) if got.is_empty() => return (all, lost),
            Ok(got) => {
                for r in got {
                    let after = all.last().map_or(0, |l| l.offset + 1);
                    assert!(r.offset >= after.max(from), "{what}: offsets out of order");
                    from = r.offset + 1;
                    all.push(r);
                }
            }
            Err(
                LogError::Lost { offset, resume, .. } | LogError::Corrupt { offset, resume, .. },
            ) if offset >= from && resume > offset => {
                lost.extend(offset..resume);
                from = resume;
            }
            Err(e) => panic!("{what}: read from {from}: {e}"),
        }
    }
}

/// Opens the disk image in `dir` as the restarted server would, checks it against `exp`,
/// then checks that the log takes appends and that the directory verifies and reopens clean.
pub fn check_image(dir: &Path, exp: &Expect, rng: &mut Rng, seen: &mut Seen, what: &str) {
    let (mut log, report) =
        Log::open(opts(dir, true)).unwrap_or_else(|e| panic!("{what}: open refused: {e}"));
    let what = format!("{what}\n  recovery: {report}");
    check_log(&log, exp, rng, &what);
    seen.images += 1;
    seen.repaired += usize::from(!report.repairs.is_empty());
    seen.reindexed += usize::from(report.indexes_rebuilt > 0);
    seen.lost_unacked += usize::from(log.next_offset() < exp.given);
    let next = log.next_offset();
    let (ts, topic, headers, payload) = record(next);
    let at = log.append(ts, &topic, &headers, &payload);
    assert_eq!(at.ok(), Some(next), "{what}: append after recovery");
    log.commit()
        .unwrap_or_else(|e| panic!("{what}: commit after recovery: {e}"));
    drop(log);
    let v = verify(dir, false).unwrap_or_else(|e| panic!("{what}: verify: {e}"));
    assert!(v.is_ok(), "{what}\n  verify after recovery: {v}");
    let (log, again) = Log::open(opts(dir, true)).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
    assert!(again.is_clean(), "{what}\n  second open: {again}");
    assert_eq!(log.next_offset(), next + 1, "{what}: after reopening");
}
