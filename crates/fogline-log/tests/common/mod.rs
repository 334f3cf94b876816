//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod recover_input;

use fogline_log::{Log, LogOptions, Record, Storage};
use std::path::Path;

/// Options for a file-backed log in `dir`.
pub fn file_opts(dir: &Path, storage: Storage, segment_bytes: u64) -> LogOptions {
    LogOptions {
        storage,
        dir: Some(dir.to_path_buf()),
        segment_bytes,
        ..LogOptions::default()
    }
}

/// Deterministic record `i`: (timestamp, topic, headers, payload).
pub fn rec(i: u64) -> (u64, Vec<u8>, Vec<u8>, Vec<u8>) {
    let topic = format!("site/dev{}", i % 7).into_bytes();
    let headers = if i % 3 == 0 { vec![] } else { vec![i as u8; 3] };
    let payload: Vec<u8> = (0..(i % 50) + 1).map(|j| (i * 31 + j) as u8).collect();
    (1_000 + i * 10, topic, headers, payload)
}

/// Appends records `from..to` (as `rec`) and commits.
pub fn fill(log: &mut Log, from: u64, to: u64) {
    for i in from..to {
        let (ts, t, h, p) = rec(i);
        assert_eq!(log.append(ts, &t, &h, &p).unwrap(), i);
    }
    log.commit().unwrap();
}

/// Checks that `r` is record `i` as written by `fill`.
pub fn check(r: &Record, i: u64) {
    let (ts, t, h, p) = rec(i);
    assert_eq!(r.offset, i);
    assert_eq!(r.timestamp, ts);
    assert_eq!(&r.topic[..], &t[..], "topic of {i}");
    assert_eq!(&r.headers[..], &h[..], "headers of {i}");
    assert_eq!(&r.payload[..], &p[..], "payload of {i}");
}

/// Reads everything from `first_offset()`.
pub fn read_all(log: &Log) -> Vec<Record> {
    log.read(0, usize::MAX, usize::MAX).unwrap()
}

/// Encoded size of record `i`.
pub fn size(i: u64) -> usize {
    let (_, t, h, p) = rec(i);
    fogline_log::RECORD_OVERHEAD + t.len() + h.len() + p.len()
}
