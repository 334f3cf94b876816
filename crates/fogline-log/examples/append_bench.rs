//! Append throughput of the log: records/s for 22-byte and 1 KiB payloads in memory, mmap and
//! fsync storage, committing every `BATCH` records (as the broker does per batch), plus a read
//! pass over what was written.
//!
//! Run: `cargo run --release -p fogline-log --example append_bench [records]`
//! (mmap/fsync files go to a temporary directory; `FOGLINE_BENCH_DIR` overrides it).

use fogline_log::{Log, LogOptions, Storage};
use std::time::Instant;

const BATCH: u64 = 64;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let records: u64 = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(2_000_000);
    let base = match std::env::var_os("FOGLINE_BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d)?,
        None => tempfile::tempdir()?,
    };
    println!("records per run: {records}, commit every {BATCH}, topic 16 B, no headers");
    for storage in [Storage::Memory, Storage::Mmap, Storage::Fsync] {
        for payload_len in [22usize, 1024] {
            // fsync commits are disk-bound; fewer records keep the run short.
            let n = if storage == Storage::Fsync {
                records / 20
            } else {
                records
            };
            let dir = base.path().join(format!("{storage}-{payload_len}"));
            let (mut log, _) = Log::open(LogOptions {
                storage,
                dir: (storage != Storage::Memory).then_some(dir),
                ..LogOptions::default()
            })?;
            let payload = vec![0x5au8; payload_len];
            let topic = b"site/robot7/imu0";
            let start = Instant::now();
            for i in 0..n {
                log.append(i, topic, b"", &payload)?;
                if i % BATCH == BATCH - 1 {
                    log.commit()?;
                }
            }
            log.commit()?;
            let append = start.elapsed().as_secs_f64();
            let start = Instant::now();
            let (mut from, mut read) = (0, 0u64);
            let mut buf = Vec::with_capacity(1024);
            while from < log.next_offset() {
                buf.clear();
                log.read_into(from, 1024, 1 << 20, &mut buf)?;
                read += buf.len() as u64;
                from = buf.last().map_or(from, |r| r.offset + 1);
            }
            let read_s = start.elapsed().as_secs_f64();
            assert_eq!(read, n);
            let mb = (n as f64 * (payload_len + topic.len() + 36) as f64) / (1 << 20) as f64;
            let segments = log.stats().segments;
            drop(log);
            let reopen = match storage {
                Storage::Memory => String::new(),
                _ => {
                    let start = Instant::now();
                    let (log, _) = Log::open(LogOptions {
                        storage,
                        dir: Some(base.path().join(format!("{storage}-{payload_len}"))),
                        ..LogOptions::default()
                    })?;
                    assert_eq!(log.next_offset(), n);
                    format!(", reopen {:.1} ms", start.elapsed().as_secs_f64() * 1e3)
                }
            };
            println!(
                "{storage:>6} {payload_len:>5} B: append {:>10.0} rec/s ({:>7.1} MiB/s), read {:>10.0} rec/s, {segments} segments{reopen}",
                n as f64 / append,
                mb / append,
                n as f64 / read_s,
            );
        }
    }
    Ok(())
}
