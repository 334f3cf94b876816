//! Memory per record of the index, counted by the allocator, against its own estimate
//! (`memory_bytes`), and the insert rate, for records of 5 attributes.
//!
//! `cargo run --release -p fogline-store --example memory [-- RECORDS]` (default 1,000,000)
//!
//! Profile of record i: `type=t{i%10} sensor=lidar{i%1000} alt={i%5000} geo={lat},{lon}
//! id=r{i%k}`: keyword attributes with 10, 1,000 and k values, a number with 5,000 values and
//! a point on a grid of k points. Two runs: k = 1,000 (values repeat, as sensors' readings
//! do) and k = the record count (`id` and `geo` unique per record, the worst case: every
//! distinct value has its own entry in each structure).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use fogline_profile::{DataProfile, Interest};
use fogline_store::{ProfileIndex, Query};

/// The system allocator, counting the bytes held.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to the system allocator with the caller's arguments unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn profile(i: u64, k: u64) -> DataProfile {
    let pairs = [
        ("type", format!("t{}", i % 10)),
        ("sensor", format!("lidar{}", i % 1000)),
        ("alt", format!("{}", i % 5000)),
        (
            "geo",
            format!(
                "{:.3},{:.3}",
                -80.0 + (i % k % 1000) as f64 * 0.16,
                -170.0 + (i % k / 1000 % 1000) as f64 * 0.34
            ),
        ),
        ("id", format!("r{}", i % k)),
    ];
    DataProfile {
        pairs: pairs
            .into_iter()
            .map(|(a, v)| (a.into(), Some(v)))
            .collect(),
    }
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    for k in [1000, n] {
        run(n, k);
    }
}

fn run(n: u64, k: u64) {
    let profiles: Vec<DataProfile> = (0..n).map(|i| profile(i, k)).collect();
    let before = HELD.load(Ordering::Relaxed);
    let mut index = ProfileIndex::new();
    let start = Instant::now();
    for (i, p) in profiles.iter().enumerate() {
        index.insert(i as u64, i as u64, "site/a/lidar", p);
    }
    let took = start.elapsed();
    let held = HELD.load(Ordering::Relaxed) - before;
    println!("records            {n}, {k} distinct ids and points");
    println!(
        "insert             {:.0} records/s",
        n as f64 / took.as_secs_f64()
    );
    println!(
        "heap (allocator)   {held} bytes, {:.1} per record",
        held as f64 / n as f64
    );
    println!(
        "memory_bytes()     {} bytes, {:.1} per record",
        index.memory_bytes(),
        index.memory_bytes() as f64 / n as f64
    );
    for text in [
        "sensor=lidar7",
        "sensor=lidar99*",
        "sensor=*dar7",
        "alt=10..12",
    ] {
        let q = Query {
            limit: 100,
            ..Query::new(Interest::parse(text).expect("a valid interest"))
        };
        let start = Instant::now();
        let page = index.query(&q);
        println!(
            "query {text:<16} {} hits in {:?}",
            page.hits.len(),
            start.elapsed()
        );
    }
}
