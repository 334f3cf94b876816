//! The two holes the power-cut workload found (issue 31, finding 8), each pinned at the
//! moment that exposed it. Both need a `kill -9` first: the next open then finds, in the
//! page cache, state that never reached the disk, and used to serve it as if it had.

use crate::check::{check_image, opts, record, Expect, Seen};
use crate::disk::{lock, unwatch, watch, write_image, Keep, Moment, Recorder, Shared};
use crate::rng::Rng;
use crate::scratch;
use fogline_log::Log;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A watched stream directory `name` under `base`, holding `image`.
fn stream(base: &Path, name: &str, image: &crate::disk::Image) -> PathBuf {
    let dir = base.join(name);
    std::fs::create_dir(&dir).expect("stream directory");
    write_image(&dir, image);
    dir
}

fn recorder(rec: Recorder) -> Shared {
    let rec = Arc::new(Mutex::new(rec));
    watch(&rec);
    rec
}

fn append(log: &mut Log, to: u64) {
    while log.next_offset() < to {
        let (ts, topic, headers, payload) = record(log.next_offset());
        log.append(ts, &topic, &headers, &payload).expect("append");
        // Retention removes files on a thread of the log's: no durability point beside ours.
        log.wait_for_removals();
    }
}

/// Restarts a process killed at `m` in `base/name`: the page cache survived, the disk holds
/// what `m` had synced.
fn restart_after_kill(base: &Path, name: &str, m: &Moment) -> (PathBuf, Shared) {
    let dir = stream(base, name, &m.live_image());
    let rec = recorder(Recorder::after_kill(&dir, m));
    (dir, rec)
}

/// Cuts the power now: the disk keeps exactly what was synced. Checks that the records
/// `acked` are all there.
fn power_cut(base: &Path, dir: &Path, rec: &Shared, acked: Range<u64>, what: &str) {
    let m = lock(rec).moment();
    unwatch(dir);
    let image = m.image(Keep::Nothing, &mut Rng::new(1));
    let after = stream(base, "after-power-cut", &image);
    let exp = Expect {
        floor: acked.start,
        acked: acked.end,
        lost: Arc::default(),
        purged_below: 0,
        appended: acked.end,
        given: acked.end,
    };
    check_image(&after, &exp, &mut Rng::new(2), &mut Seen::default(), what);
}

/// Records appended but not committed when the process was killed are served after the
/// restart, so the restart must sync them first: else a power cut takes back records that
/// readers had, and gives their offsets to other records.
#[test]
fn issue_31_records_found_in_the_page_cache_are_synced_before_they_are_served() {
    let base = scratch();
    let dir = stream(base.path(), "killed", &Default::default());
    let rec = recorder(Recorder::new(&dir));
    let (mut log, _) = Log::open(opts(&dir, false)).expect("open");
    append(&mut log, 5);
    log.commit().expect("commit");
    append(&mut log, 10);
    drop(log); // killed: nothing more is flushed
    let killed = lock(&rec).moment();
    unwatch(&dir);

    let (dir, rec) = restart_after_kill(base.path(), "restarted", &killed);
    let (log, _) = Log::open(opts(&dir, false)).expect("open after the kill");
    assert_eq!(
        log.committed_offset(),
        10,
        "the page cache's records are served"
    );
    drop(log);
    power_cut(
        base.path(),
        &dir,
        &rec,
        0..10,
        "power cut after the restart",
    );
}

/// A process killed after renaming a new segment into place, before syncing the directory,
/// leaves that segment in the page cache only, in a directory that looks clean. The restart
/// must sync the directory before records appended to that segment are acknowledged.
#[test]
fn issue_31_segments_found_after_a_kill_are_synced_before_records_in_them_count() {
    let base = scratch();
    let dir = stream(base.path(), "killed", &Default::default());
    let rec = recorder(Recorder::new(&dir));
    let (mut log, _) = Log::open(opts(&dir, false)).expect("open");
    for _ in 0..100 {
        let next = log.next_offset();
        append(&mut log, next + 1);
        log.commit().expect("commit");
    }
    drop(log);
    let cuts = lock(&rec).take_cuts();
    unwatch(&dir);
    // A moment after a roll renamed a new segment into place, before the directory's fsync;
    // one whose next records fit in it, so appending them does not replace it.
    let small = |base: u64| (base..base + 4).all(|o| record(o).3.len() < 1000);
    let killed = cuts
        .into_iter()
        .map(|c| c.moment)
        .filter(|m| m.durable_names.keys().any(|name| name.ends_with(".log")))
        .find(|m| {
            m.live_names.keys().any(|name| {
                let base = name.strip_suffix(".log").and_then(|b| b.parse().ok());
                !m.durable_names.contains_key(name) && base.is_some_and(small)
            })
        })
        .expect("a moment with a new segment not durable yet");

    let (dir, rec) = restart_after_kill(base.path(), "restarted", &killed);
    let (mut log, _) = Log::open(opts(&dir, false)).expect("open after the kill");
    let (floor, from, segments) = (log.first_offset(), log.next_offset(), log.stats().segments);
    append(&mut log, from + 3);
    log.commit().expect("commit");
    assert_eq!(log.stats().segments, segments, "appended without a roll");
    drop(log);
    power_cut(
        base.path(),
        &dir,
        &rec,
        floor..from + 3,
        "power cut after the restart",
    );
}
