//! Behaviour of append, commit, read, time lookup, rolling, retention and reopen.

mod common;

use common::*;
use fogline_log::{Log, LogError, LogOptions, Storage};
use std::time::Duration;

fn memory(segment_bytes: u64) -> Log {
    Log::open(LogOptions {
        segment_bytes,
        ..LogOptions::default()
    })
    .unwrap()
    .0
}

#[test]
fn append_read_round_trip_in_every_mode() {
    for storage in [Storage::Memory, Storage::Mmap, Storage::Fsync] {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, report) = Log::open(file_opts(dir.path(), storage, 1024)).unwrap();
        assert!(report.is_clean(), "{storage}: {report}");
        fill(&mut log, 0, 200);
        let all = read_all(&log);
        assert_eq!(all.len(), 200, "{storage}");
        for (i, r) in all.iter().enumerate() {
            check(r, i as u64);
        }
        assert!(log.stats().segments > 1, "{storage}: small segments roll");
    }
}

#[test]
fn records_are_visible_only_after_commit() {
    let mut log = memory(1 << 20);
    log.append(1, b"t", b"", b"a").unwrap();
    assert!(read_all(&log).is_empty());
    assert_eq!((log.next_offset(), log.committed_offset()), (1, 0));
    log.commit().unwrap();
    assert_eq!(read_all(&log).len(), 1);
    assert_eq!(log.committed_offset(), 1);
}

/// Group commit: a sync job flushes what was appended when it was made, on another thread,
/// while appends go on; only what it flushed becomes visible.
#[test]
fn sync_jobs_make_what_they_flushed_visible() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(file_opts(dir.path(), Storage::Fsync, 1 << 20)).unwrap();
    assert!(log.sync_job().is_none(), "nothing appended");
    for i in 0..3 {
        log.append(1, b"t", b"", &[i]).unwrap();
    }
    let job = log.sync_job().unwrap();
    assert_eq!(job.end_offset(), 3);
    log.append(1, b"t", b"", b"later").unwrap();
    let job = std::thread::spawn(move || {
        job.run().unwrap();
        job
    })
    .join()
    .unwrap();
    assert_eq!(
        log.committed_offset(),
        0,
        "nothing visible before the job finishes"
    );
    log.finish_sync(&job);
    assert_eq!(
        log.committed_offset(),
        3,
        "the later record is not flushed yet"
    );
    assert_eq!(read_all(&log).len(), 3);
    let rest = log.sync_job().unwrap();
    assert_eq!(rest.end_offset(), 4);
    rest.run().unwrap();
    log.finish_sync(&rest);
    log.finish_sync(&job); // a stale job changes nothing
    assert_eq!(log.committed_offset(), 4);
    assert!(log.sync_job().is_none());
    // After a restart, everything flushed is there.
    drop(log);
    let (log, _) = Log::open(file_opts(dir.path(), Storage::Fsync, 1 << 20)).unwrap();
    assert_eq!(read_all(&log).len(), 4);
}

/// A job made before the segment rolled is ignored: sealing committed the whole segment.
#[test]
fn a_sync_job_of_a_sealed_segment_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(file_opts(dir.path(), Storage::Fsync, 512)).unwrap();
    log.append(1, b"t", b"", &[0; 100]).unwrap();
    let job = log.sync_job().unwrap();
    for _ in 0..10 {
        log.append(1, b"t", b"", &[0; 100]).unwrap();
    }
    assert!(log.stats().segments > 1);
    let sealed_through = log.committed_offset();
    assert!(sealed_through >= 1, "sealing committed the first segment");
    job.run().unwrap();
    log.finish_sync(&job);
    assert_eq!(log.committed_offset(), sealed_through);
    for storage in [Storage::Memory, Storage::Mmap] {
        let dir = tempfile::tempdir().unwrap();
        let (mut log, _) = Log::open(file_opts(dir.path(), storage, 512)).unwrap();
        log.append(1, b"t", b"", b"x").unwrap();
        assert!(log.sync_job().is_none(), "{storage}: commit() is enough");
    }
}

/// The first record does not fit the empty first segment, and its larger replacement cannot
/// be created (here the directory is gone; a full disk does the same): the append fails with
/// an error, the log keeps its segment and works again once the disk does.
#[test]
fn a_failed_replacement_of_the_empty_segment_keeps_the_log_usable() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("s");
    let (mut log, _) = Log::open(file_opts(&dir, Storage::Mmap, 1024)).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let big = vec![5u8; 4000];
    assert!(matches!(
        log.append(1, b"t", b"", &big),
        Err(LogError::Io { .. })
    ));
    assert_eq!(log.next_offset(), 0);
    std::fs::create_dir(&dir).unwrap();
    assert_eq!(log.append(1, b"t", b"", &big).unwrap(), 0);
    log.commit().unwrap();
    let got = read_all(&log);
    assert_eq!(got.len(), 1);
    assert_eq!(&got[0].payload[..], &big[..]);
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// `reserve` makes room for a whole batch before any of it is appended: it rolls only when
/// the batch does not fit, a batch larger than a segment gets a segment of its own size, and
/// a roll that fails changes nothing, so a refused batch leaves no record behind.
#[test]
fn reserve_rolls_for_a_whole_batch_or_changes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("s");
    let (mut log, _) = Log::open(file_opts(&dir, Storage::Mmap, 1024)).unwrap();
    let one = fogline_log::records_len(1, 1, 100);
    assert_eq!(one, 137, "36 bytes of header, topic, payload");
    log.reserve(7 * one).unwrap();
    for _ in 0..7 {
        log.append(1, b"t", b"", &[1; 100]).unwrap();
    }
    assert_eq!(log.stats().segments, 1, "seven fit without a roll");
    log.commit().unwrap();

    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        log.reserve(2 * one).is_err(),
        "the roll cannot seal the full segment (its index) or create the next"
    );
    assert_eq!(log.next_offset(), 7);
    assert_eq!(read_all(&log).len(), 7);

    std::fs::create_dir(&dir).unwrap();
    log.reserve(10 * one).unwrap();
    assert_eq!(log.stats().segments, 2);
    for _ in 0..10 {
        log.append(1, b"t", b"", &[2; 100]).unwrap();
    }
    assert_eq!(log.stats().segments, 2, "a segment as large as the batch");
    log.commit().unwrap();
    assert_eq!(log.next_offset(), 17);
}

/// Linux reports a failed writeback once, to whichever flush of the file checks first, and
/// then counts those pages clean: after one flush of a segment failed, no later one (here a
/// roll's seal, and a commit) may succeed and make its records visible.
#[test]
fn after_a_failed_flush_no_flush_of_its_segment_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(file_opts(dir.path(), Storage::Fsync, 1024)).unwrap();
    log.append(1, b"t", b"", &[1; 100]).unwrap();
    let job = log.sync_job().expect("a flush to run");
    job.inject_failure();
    assert!(job.run().is_err());
    let rolled = (0..20)
        .map(|_| log.append(1, b"t", b"", &[2; 100]))
        .find(Result::is_err);
    let err = rolled.expect("the roll's seal fails").unwrap_err();
    assert!(err.to_string().contains("injected failure"), "{err}");
    assert!(log.commit().is_err());
    assert_eq!(
        log.committed_offset(),
        0,
        "nothing of the segment is visible"
    );
}

#[test]
fn read_limits_and_start() {
    let mut log = memory(512);
    fill(&mut log, 0, 100);
    let r = log.read(10, 5, usize::MAX).unwrap();
    assert_eq!(
        r.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![10, 11, 12, 13, 14]
    );
    // Byte limit: sizes of 10 and 11 fit exactly, 12 does not.
    let r = log.read(10, 100, size(10) + size(11)).unwrap();
    assert_eq!(r.len(), 2);
    // At least one record even when it is larger than max_bytes.
    assert_eq!(log.read(20, 100, 1).unwrap().len(), 1);
    assert!(log.read(20, 0, 1000).unwrap().is_empty());
    assert!(log.read(100, 10, 1000).unwrap().is_empty());
    assert!(log.read(u64::MAX, 10, 1000).unwrap().is_empty());
    // Across segment boundaries.
    let r = log.read(0, 100, usize::MAX).unwrap();
    assert_eq!(r.len(), 100);
    r.iter().enumerate().for_each(|(i, r)| check(r, i as u64));
}

#[test]
fn offset_for_time_and_clamping() {
    let mut log = memory(200);
    assert_eq!(log.offset_for_time(0), 0);
    for (i, ts) in [10u64, 20, 20, 15, 40, 50].into_iter().enumerate() {
        assert_eq!(log.append(ts, b"t", b"", &[i as u8; 40]).unwrap(), i as u64);
    }
    log.commit().unwrap();
    let ts: Vec<u64> = read_all(&log).iter().map(|r| r.timestamp).collect();
    assert_eq!(
        ts,
        vec![10, 20, 20, 20, 40, 50],
        "older timestamps are raised"
    );
    assert!(log.stats().segments > 2);
    let cases = [
        (0, 0),
        (10, 0),
        (11, 1),
        (20, 1),
        (21, 4),
        (40, 4),
        (50, 5),
        (51, 6),
    ];
    for (t, want) in cases {
        assert_eq!(log.offset_for_time(t), want, "time {t}");
    }
}

#[test]
fn time_index_over_many_records() {
    let mut log = memory(64 << 10);
    for i in 0..20_000u64 {
        log.append(i * 3, b"x", b"", &[0; 20]).unwrap();
    }
    log.commit().unwrap();
    for t in (0..60_010).step_by(997) {
        assert_eq!(
            log.offset_for_time(t),
            t.div_ceil(3).min(20_000),
            "time {t}"
        );
    }
    let r = log.read(12_345, 1, usize::MAX).unwrap();
    assert_eq!((r[0].offset, r[0].timestamp), (12_345, 12_345 * 3));
}

#[test]
fn oversized_records() {
    let mut log = Log::open(LogOptions {
        segment_bytes: 256,
        max_record_bytes: 10_000,
        ..LogOptions::default()
    })
    .unwrap()
    .0;
    let err = log.append(0, b"t", b"", &[0; 10_000]).unwrap_err();
    assert!(
        matches!(err, LogError::RecordTooLarge { max: 10_000, .. }),
        "{err}"
    );
    // Larger than a segment but within the limit: gets its own segment.
    log.append(1, b"t", b"", &[1; 100]).unwrap();
    log.append(2, b"t", b"", &[2; 5000]).unwrap();
    log.append(3, b"t", b"", &[3; 10]).unwrap();
    log.commit().unwrap();
    let all = read_all(&log);
    assert_eq!(
        all.iter().map(|r| r.payload.len()).collect::<Vec<_>>(),
        vec![100, 5000, 10]
    );
    assert_eq!(log.stats().segments, 3);
}

#[test]
fn first_append_larger_than_empty_segment_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(file_opts(dir.path(), Storage::Mmap, 128)).unwrap();
    log.append(1, b"t", b"", &[7; 1000]).unwrap();
    log.commit().unwrap();
    assert_eq!(log.stats().segments, 1);
    drop(log);
    let (log, report) = Log::open(file_opts(dir.path(), Storage::Mmap, 128)).unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(read_all(&log)[0].payload.len(), 1000);
}

#[test]
fn retention_by_bytes_keeps_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let opts = fogline_log::LogOptions {
        retention_bytes: Some(2000),
        ..file_opts(dir.path(), Storage::Mmap, 500)
    };
    let (mut log, _) = Log::open(opts.clone()).unwrap();
    fill(&mut log, 0, 300);
    let st = log.stats();
    assert!(st.first_offset > 0 && st.next_offset == 300, "{st:?}");
    assert!(st.bytes <= 2000 + 500, "{st:?}");
    let all = read_all(&log);
    assert_eq!(all[0].offset, st.first_offset);
    assert_eq!(all.len() as u64, 300 - st.first_offset);
    all.iter().for_each(|r| check(r, r.offset));
    // Reading from a dropped offset starts at the first one held.
    assert_eq!(
        log.read(0, 1, usize::MAX).unwrap()[0].offset,
        st.first_offset
    );
    log.wait_for_removals();
    let files = std::fs::read_dir(dir.path()).unwrap().count();
    let want = 2 * st.segments; // a .log per segment, an .idx per sealed one, the .lock
    assert_eq!(files, want);
    drop(log);
    let (log, report) = Log::open(opts).unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(
        (log.first_offset(), log.next_offset()),
        (st.first_offset, 300)
    );
}

/// Retention deletes files on the log's own thread: a deletion that fails is reported by
/// `take_removal_errors`, leaves the file, and the next open finds that segment again.
#[test]
fn a_failed_removal_is_reported_and_the_segment_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let opts = LogOptions {
        retention_age: Some(Duration::from_secs(3600)),
        ..file_opts(dir.path(), Storage::Mmap, 300)
    };
    let (mut log, _) = Log::open(opts.clone()).unwrap();
    let t0 = fogline_log::now_micros();
    for i in 0..20u64 {
        log.append(t0 + i, b"t", b"", &[i as u8; 100]).unwrap();
    }
    log.commit().unwrap();
    assert!(log.stats().segments > 2);
    log.wait_for_removals(); // the seals' indexes are written
                             // The oldest segment's index becomes a directory with an entry: removing it fails.
    let idx = dir.path().join(format!("{:020}.idx", 0));
    std::fs::remove_file(&idx).unwrap();
    std::fs::create_dir(&idx).unwrap();
    std::fs::write(idx.join("x"), b"x").unwrap();
    let r = log.enforce_retention(t0 + 2 * 3_600_000_000);
    assert!(r.segments_removed >= 2, "{r:?}");
    log.wait_for_removals();
    let errors = log.take_removal_errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(log.take_removal_errors().is_empty(), "reported once");
    let log_file = dir.path().join(format!("{:020}.log", 0));
    assert!(log_file.exists(), "kept: its index could not go first");
    drop(log);
    std::fs::remove_dir_all(&idx).unwrap();
    let (log, _) = Log::open(opts).unwrap();
    assert_eq!(log.first_offset(), 0, "the segment is found again");
}

#[test]
fn retention_by_age_keeps_held_bytes_valid() {
    let mut log = Log::open(LogOptions {
        segment_bytes: 300,
        retention_age: Some(Duration::from_secs(3600)),
        ..LogOptions::default()
    })
    .unwrap()
    .0;
    // Recent timestamps, so the retention run at each segment roll keeps everything.
    let t0 = fogline_log::now_micros();
    for i in 0..60u64 {
        log.append(t0 + i, b"t", b"", &[i as u8; 30]).unwrap();
    }
    log.commit().unwrap();
    assert_eq!(log.first_offset(), 0);
    let segments = log.stats().segments;
    assert!(segments > 3);
    let held = log.read(0, 1, usize::MAX).unwrap();
    let hour = 3_600_000_000;
    let r = log.enforce_retention(t0 + hour);
    assert_eq!(r.segments_removed, 0, "nothing older than the age yet");
    let r = log.enforce_retention(t0 + hour + 20);
    assert!(
        r.segments_removed > 0 && r.segments_removed < segments - 1,
        "{r}"
    );
    assert!(log.stats().first_timestamp.unwrap() >= t0 + 20 - 10);
    let r = log.enforce_retention(t0 + 2 * hour);
    assert_eq!(
        log.stats().segments,
        1,
        "all but the active segment dropped"
    );
    assert_eq!(r.first_offset, log.first_offset());
    // Bytes read before retention stay valid.
    assert_eq!((held[0].offset, &held[0].payload[..]), (0, &[0u8; 30][..]));
    // Offsets continue.
    assert_eq!(log.append(0, b"t", b"", b"x").unwrap(), 60);
}

#[test]
fn bytes_outlive_deleted_segment_files() {
    let dir = tempfile::tempdir().unwrap();
    let opts = LogOptions {
        retention_bytes: Some(1),
        ..file_opts(dir.path(), Storage::Mmap, 400)
    };
    let (mut log, _) = Log::open(opts).unwrap();
    fill(&mut log, 0, 5);
    let held = log.read(0, 5, usize::MAX).unwrap();
    fill(&mut log, 5, 40);
    assert!(log.first_offset() > 5);
    log.wait_for_removals();
    assert!(!dir.path().join(format!("{:020}.log", 0)).exists());
    for r in &held {
        check(r, r.offset);
    }
}

#[test]
fn reopen_continues_offsets_and_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let opts = file_opts(dir.path(), Storage::Fsync, 700);
    let (mut log, _) = Log::open(opts.clone()).unwrap();
    fill(&mut log, 0, 50);
    drop(log);
    let (mut log, report) = Log::open(opts.clone()).unwrap();
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.records, 50);
    assert_eq!(report.scanned, 1, "only the active segment is scanned");
    fill(&mut log, 50, 80);
    assert_eq!(log.append(0, b"t", b"", b"").unwrap(), 80);
    log.commit().unwrap();
    let all = read_all(&log);
    assert_eq!(
        all[80].timestamp,
        rec(79).0,
        "timestamp clamped across reopen"
    );
    all[..80]
        .iter()
        .enumerate()
        .for_each(|(i, r)| check(r, i as u64));
}

#[test]
fn a_directory_is_opened_by_one_log_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let (log, _) = Log::open(file_opts(dir.path(), Storage::Mmap, 4096)).unwrap();
    let err = Log::open(file_opts(dir.path(), Storage::Mmap, 4096)).unwrap_err();
    assert!(matches!(err, LogError::Locked(_)), "{err}");
    drop(log);
    assert!(Log::open(file_opts(dir.path(), Storage::Mmap, 4096)).is_ok());
}

#[test]
fn file_storage_needs_a_directory() {
    let err = Log::open(LogOptions {
        storage: Storage::Mmap,
        ..LogOptions::default()
    })
    .unwrap_err();
    assert!(matches!(err, LogError::NoDirectory(Storage::Mmap)));
}

#[test]
fn log_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Log>();
}
