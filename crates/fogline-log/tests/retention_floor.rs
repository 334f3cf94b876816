//! The retention floor: retention (by size and by age) never drops a segment holding an
//! offset at or after it, says how many bytes it kept for it, and catches up once it moves.

mod common;

use common::*;
use fogline_log::{Log, LogOptions, Storage};
use std::time::Duration;

const STORAGES: [Storage; 2] = [Storage::Memory, Storage::Mmap];

fn open(dir: &std::path::Path, storage: Storage, bytes: Option<u64>, age: Option<Duration>) -> Log {
    let opts = LogOptions {
        retention_bytes: bytes,
        retention_age: age,
        ..file_opts(dir, storage, 512)
    };
    Log::open(opts).unwrap().0
}

#[test]
fn size_retention_keeps_everything_at_or_after_the_floor() {
    for storage in STORAGES {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), storage, Some(1024), None);
        log.set_retention_floor(Some(5));
        // Every roll runs retention: with the floor at 5, offsets 5.. all stay.
        fill(&mut log, 0, 400);
        assert!(log.first_offset() <= 5, "{storage}: {}", log.first_offset());
        let kept = log.read(5, usize::MAX, usize::MAX).unwrap();
        assert_eq!(kept.len(), 395, "{storage}");
        for r in &kept {
            check(r, r.offset);
        }
        let held = log.held_bytes();
        assert!(
            log.stats().bytes > 1024 && held > 0,
            "{storage}: {:?}, held {held}",
            log.stats()
        );

        // The reader moves on: the next pass drops what it has taken, keeps the rest.
        log.set_retention_floor(Some(300));
        let r = log.enforce_retention(fogline_log::now_micros());
        assert!(r.segments_removed > 0, "{storage}: {r:?}");
        assert!(log.first_offset() <= 300, "{storage}: {r:?}");
        assert!(r.held_bytes < held, "{storage}: {r:?} after {held}");
        assert_eq!(r.held_bytes, log.held_bytes());
        check(&log.read(300, 1, usize::MAX).unwrap()[0], 300);

        // Released: plain size retention again, nothing held.
        log.set_retention_floor(None);
        let r = log.enforce_retention(fogline_log::now_micros());
        assert_eq!(r.held_bytes, 0, "{storage}");
        assert!(log.first_offset() > 300, "{storage}: {r:?}");
        assert!(
            log.stats().bytes <= 1024 + 512,
            "{storage}: {:?}",
            log.stats()
        );
    }
}

#[test]
fn age_retention_keeps_everything_at_or_after_the_floor() {
    for storage in STORAGES {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), storage, None, Some(Duration::from_secs(1)));
        // The records' timestamps are long past: only the floor keeps them at each roll.
        log.set_retention_floor(Some(0));
        fill(&mut log, 0, 200);
        let segments = log.stats().segments;
        assert!(segments > 4, "{storage}");
        let late = fogline_log::now_micros();
        let r = log.enforce_retention(late);
        assert_eq!(r.segments_removed, 0, "{storage}");
        assert_eq!(log.first_offset(), 0, "{storage}");
        assert_eq!(read_all(&log).len(), 200, "{storage}");
        let held = r.held_bytes;
        assert!(held > 0, "{storage}");

        // A floor inside a segment keeps that whole segment.
        log.set_retention_floor(Some(100));
        let r = log.enforce_retention(late);
        assert!(r.segments_removed > 0, "{storage}");
        assert!(log.first_offset() <= 100 && log.first_offset() > 0, "{r:?}");
        check(&log.read(100, 1, usize::MAX).unwrap()[0], 100);
        assert_eq!(r.bytes_removed + r.held_bytes, held, "{storage}: {r:?}");

        // Released: what was held is exactly what retention drops now.
        log.set_retention_floor(None);
        let r2 = log.enforce_retention(late);
        assert_eq!(r2.bytes_removed, r.held_bytes, "{storage}: {r2:?}");
        assert_eq!((r2.held_bytes, log.stats().segments), (0, 1), "{storage}");
    }
}

/// With no limit exceeded the floor holds nothing back and nothing is counted.
#[test]
fn a_floor_under_the_limits_holds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), Storage::Mmap, Some(1 << 20), None);
    log.set_retention_floor(Some(0));
    fill(&mut log, 0, 100);
    let r = log.enforce_retention(fogline_log::now_micros());
    assert_eq!((r.segments_removed, r.held_bytes), (0, 0));
    assert_eq!(log.retention_floor(), Some(0));
}
