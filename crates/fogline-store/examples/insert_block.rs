//! Filing records from their header blocks (`ProfileIndex::insert_block`, what the node's
//! store does for every record of a stream) into a fresh index, at several sizes: the
//! index's part of the store benchmark's batched store (`fogline-bench store`, whose records
//! these are: `id`, `sensor`, `type`, `alt` and `geo`).
//!
//! `cargo run --release -p fogline-store --example insert_block [-- SIZE ...]`
//! (default 100 1000 100000); prints microseconds per fresh index, the median of 9 runs.

use std::time::Instant;

use fogline_profile::DataProfile;
use fogline_store::ProfileIndex;

/// Topic and header block of record `i`, as the store benchmark makes them.
fn record(i: u64) -> (String, bytes::Bytes) {
    let kind = ["lidar", "radar", "sonar", "camera"][(i / 1000 % 4) as usize];
    let pairs = [
        ("id", format!("r{i}")),
        ("sensor", format!("{kind}{:03}", i % 1000)),
        (
            "type",
            ["drone", "robot", "buoy"][(i % 3) as usize].to_string(),
        ),
        ("alt", (i * 7 % 500).to_string()),
        (
            "geo",
            format!(
                "{:.3},{:.3}",
                40.0 + (i % 100) as f64 * 0.001,
                -74.5 + (i / 100 % 100) as f64 * 0.001
            ),
        ),
    ];
    let profile = DataProfile::from_pairs(pairs.iter().map(|(a, v)| (*a, Some(v.as_str()))))
        .expect("valid attributes");
    let headers = profile.to_headers().expect("a header block");
    (format!("site/{}/{kind}", i % 8), headers)
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a size"))
        .collect();
    let sizes = if sizes.is_empty() {
        vec![100, 1000, 100_000]
    } else {
        sizes
    };
    let records: Vec<_> = (0..*sizes.iter().max().unwrap_or(&0) as u64)
        .map(record)
        .collect();
    for n in sizes {
        // Enough fresh indexes per run to time about 100,000 records.
        let reps = (100_000 / n.max(1)).max(1);
        let mut runs: Vec<f64> = (0..9)
            .map(|_| {
                let start = Instant::now();
                for _ in 0..reps {
                    let mut index = ProfileIndex::new();
                    for (i, (topic, headers)) in records[..n].iter().enumerate() {
                        let ts = 1_764_000_000_000_000 + i as u64 * 1000;
                        index.insert_block(i as u64, ts, topic, headers);
                    }
                    std::hint::black_box(&index);
                }
                start.elapsed().as_secs_f64() * 1e6 / reps as f64
            })
            .collect();
        runs.sort_by(f64::total_cmp);
        println!(
            "{n:>8} records: {:>10.1} us per fresh index ({:.3} us a record)",
            runs[4],
            runs[4] / n as f64
        );
    }
}
