//! How long the append that rolls a segment takes, against every other append: the stall a
//! roll puts on the thread that appends (in the broker, the runtime thread every connection
//! shares). Writes 60 kB records, committing each, through `rolls` 64 MiB segments per
//! storage mode, and prints the rolling appends' times and the worst other append.
//!
//! Run: `cargo run --release -p fogline-log --example roll_stall [rolls] [MB/s]`
//! (files go to a temporary directory; `FOGLINE_BENCH_DIR` overrides it). Flat out by
//! default; with a rate, appends are paced to it (fsync storage may fall below it), as a
//! node's intake is below the disk's bandwidth.

use fogline_log::{Log, LogOptions, Storage};
use std::time::{Duration, Instant};

const SEGMENT: u64 = 64 << 20;
const PAYLOAD: usize = 60_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rolls: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(16);
    let rate: Option<f64> = std::env::args().nth(2).map(|a| a.parse()).transpose()?;
    let base = match std::env::var_os("FOGLINE_BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d)?,
        None => tempfile::tempdir()?,
    };
    let payload = vec![7u8; PAYLOAD];
    for storage in [Storage::Mmap, Storage::Fsync] {
        let opts = LogOptions {
            storage,
            dir: Some(base.path().join(storage.as_str())),
            segment_bytes: SEGMENT,
            ..LogOptions::default()
        };
        let (mut log, _) = Log::open(opts)?;
        let (mut rolled, mut other) = (Vec::new(), 0u128);
        let (start, mut bytes) = (Instant::now(), 0usize);
        while rolled.len() < rolls {
            if let Some(mb_s) = rate {
                let due = start + Duration::from_secs_f64(bytes as f64 / (mb_s * 1e6));
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
            let segments = log.stats().segments;
            let t = Instant::now();
            log.append(0, b"roll", b"", &payload)?;
            let us = t.elapsed().as_micros();
            log.commit()?;
            bytes += PAYLOAD;
            if log.stats().segments != segments {
                rolled.push(us);
            } else {
                other = other.max(us);
            }
        }
        let mut sorted = rolled.clone();
        sorted.sort_unstable();
        println!(
            "{storage}: rolling appends (us) {rolled:?}; median {}, max {}; worst other append \
             {other}; {:.0} MB/s",
            sorted[sorted.len() / 2],
            sorted[sorted.len() - 1],
            bytes as f64 / start.elapsed().as_secs_f64() / 1e6
        );
    }
    Ok(())
}
