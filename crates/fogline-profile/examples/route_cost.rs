//! Routing cost: time to match one data profile against n interests of d terms, with the
//! index and with a naive scan, at a fixed selectivity (each profile matches 1% of them).
//!
//! `cargo run --release -p fogline-profile --example route_cost`
//!
//! Workload: 100 clusters; interest i belongs to cluster i*7 mod 100 and has d terms, term j
//! on attribute `aj` of kind j: exact keyword, range, prefix, geo box, suffix, geo radius.
//! A profile of cluster c carries d attributes whose values satisfy exactly the terms of
//! cluster c (so each term holds for 1% of profiles, and so does each interest).

use std::time::Instant;

use fogline_profile::workload::{interest, profile, CLUSTERS};
use fogline_profile::{DataProfile, Interest, InterestIndex};

/// Median over 5 rounds of the time per call, in microseconds; each round lasts ~20 ms.
fn time_per_call(mut f: impl FnMut(usize)) -> f64 {
    let start = Instant::now();
    let mut calls = 0;
    while start.elapsed().as_millis() < 20 {
        f(calls);
        calls += 1;
    }
    let mut rounds: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            for k in 0..calls {
                f(k);
            }
            t.elapsed().as_secs_f64() * 1e6 / calls as f64
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[2]
}

fn main() {
    let sizes = [1usize, 10, 100, 1_000, 10_000, 100_000];
    let profiles: Vec<Vec<DataProfile>> = (0..=6)
        .map(|d| {
            (0..CLUSTERS)
                .map(|c| profile(c * 37 % CLUSTERS, d))
                .collect()
        })
        .collect();
    let mut index_us = vec![vec![0.0; 7]; sizes.len()];
    let mut scan_us = index_us.clone();
    let mut heap = vec![0usize; sizes.len()];
    let mut out = Vec::new();
    for (si, &n) in sizes.iter().enumerate() {
        for d in 1..=6 {
            let interests: Vec<Interest> = (0..n).map(|i| interest(i, d)).collect();
            let mut index = InterestIndex::new();
            for (i, it) in interests.iter().enumerate() {
                index.insert(i as u64, it);
            }
            if d == 6 {
                heap[si] = index.heap_bytes();
            }
            let ps = &profiles[d];
            for p in ps.iter().take(10) {
                index.matches(p, "t", &mut out);
                let want = interests.iter().filter(|i| i.matches(p, "t")).count();
                assert_eq!(out.len(), want, "the index and the scan disagree");
            }
            index_us[si][d] = time_per_call(|k| {
                index.matches(&ps[k % ps.len()], "t", &mut out);
                std::hint::black_box(&out);
            });
            scan_us[si][d] = time_per_call(|k| {
                let p = &ps[k % ps.len()];
                out.clear();
                out.extend(
                    (0..n)
                        .filter(|&i| interests[i].matches(p, "t"))
                        .map(|i| i as u64),
                );
                std::hint::black_box(&out);
            });
        }
    }
    println!("Match time per data profile, microseconds (median of 5 rounds); 1% selectivity.\n");
    println!("| interests | d=1 | d=2 | d=3 | d=4 | d=5 | d=6 | d=6 / d=1 |");
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (si, &n) in sizes.iter().enumerate() {
        let r = &index_us[si];
        let cells: Vec<String> = (1..=6).map(|d| format!("{:.2}", r[d])).collect();
        println!("| {n} | {} | {:.2}x |", cells.join(" | "), r[6] / r[1]);
    }
    println!("\nNaive scan, microseconds per data profile, and scan / index:\n");
    println!("| interests | d=1 | d=2 | d=3 | d=4 | d=5 | d=6 |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for (si, &n) in sizes.iter().enumerate() {
        let cells: Vec<String> = (1..=6)
            .map(|d| {
                format!(
                    "{:.2} ({:.1}x)",
                    scan_us[si][d],
                    scan_us[si][d] / index_us[si][d]
                )
            })
            .collect();
        println!("| {n} | {} |", cells.join(" | "));
    }
    println!("\nIndex heap_bytes at d=6:\n");
    for (si, &n) in sizes.iter().enumerate() {
        println!("- {n} interests: {:.1} KiB", heap[si] as f64 / 1024.0);
    }
}
