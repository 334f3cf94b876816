//! `fogline-bench store`: the queryable store against SQLite and redb, R-Pulsar's figures 5-7
//! (paper 004, section V-A2): store rate, exact-query and wildcard-query latency at stored
//! sizes from 1 to 1M elements.
//!
//! All three engines run in this process, one after the other, pinned to the server core;
//! each round runs every size on every engine, the engine order rotating per round, each
//! run on a fresh store in `--work-dir`. A run:
//! 1. stores the first N records, committing every `--batch` records (the batched rate);
//! 2. runs each query until `--query-reps` answers or `--query-time`, whichever comes first
//!    (at least 5), and records p50 and p99 and the answer (count and sum of offsets);
//! 3. fogline only: rebuilds its index by scanning the log (the restart cost) and reads the
//!    index's memory;
//! 4. stores more records, each committed alone, in runs of up to `--per-record-max`
//!    records or `--per-record-time`, repeated until the runs took 100 ms (at most 5 runs;
//!    the median run's rate, on a store holding N records and those of the runs before).
//!    An engine whose run takes the whole `--per-record-time` makes one run; only one fast
//!    enough makes several, so its store grows further (up to N + 5 x `--per-record-max`).
//!
//! Each run is made in one durability class (`--durability`), the same for every engine:
//! every commit survives a power loss (fogline `fsync` storage, SQLite WAL with
//! `synchronous=FULL`, redb `Durability::Immediate`) or a process crash (fogline `mmap`
//! storage, its default; SQLite WAL with `synchronous=NORMAL`; redb still `Immediate`, its
//! weakest setting that survives one). The timings start with the engine open: creating or
//! opening a store is never timed, for any engine, and the machine's dirty pages are
//! written back (`sync(2)`) before each store is opened and before the per-record runs, so
//! none waits behind the writeback of another engine's run or of its own earlier phase
//! (which made fogline's per-record rate swing between rounds of one size, 185k-1.20M/s, in
//! `bench/results/store-2026-11-28-2`). A query's latency counts only where all
//! engines gave the same answer in the round and class; the summary says where they did not.
//!
//! Record i: topic `site/{i%8}/{kind}`, profile `id=r{i} sensor={kind}{i%1000:03}
//! type={drone|robot|buoy} alt={i*7%500} geo={lat},{lon}` (a 100 x 100 grid), a 64-byte
//! payload, timestamps 1 ms apart; kind = lidar, radar, sonar, camera by `i/1000 % 4`.
//! Queries: `id=r{N/2}` (one record, the paper's exact query), `sensor=lidar000` (one per
//! 4,000), `sensor=lidar00*` (prefix, ten sensors) and `sensor=*dar000` (suffix, two).

mod engines;
mod report;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::Bytes;
use fogline_bench::pin::{self, Placement};
use fogline_profile::DataProfile;

use engines::{Answer, Ask, Durability, Engine, Fogline, Kind, Rec, Redb, Sqlite};

/// Arguments of `fogline-bench store`.
#[derive(clap::Args, Debug)]
pub struct StoreArgs {
    /// Stored sizes, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,10,100,1000,10000,100000,1000000"
    )]
    sizes: Vec<usize>,
    /// Engines, comma-separated: fogline, sqlite, redb.
    #[arg(long, value_delimiter = ',', default_value = "fogline,sqlite,redb")]
    engines: Vec<String>,
    /// Durability classes, comma-separated: power-loss, process-crash.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "power-loss,process-crash"
    )]
    durability: Vec<Durability>,
    /// Rounds; each runs every class, size and engine.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Records per commit in the batched store.
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    /// Most records stored one commit each, per run (long enough that a log's periodic
    /// work, such as fogline's page populating every MiB, averages in rather than
    /// deciding the run).
    #[arg(long, default_value_t = 20_000)]
    per_record_max: usize,
    /// Longest time spent storing one commit per record, per run.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    per_record_time: Duration,
    /// Most answers timed per query and run.
    #[arg(long, default_value_t = 200)]
    query_reps: usize,
    /// Longest time spent on one query per run.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration)]
    query_time: Duration,
    /// Results folder.
    #[arg(long, default_value = "bench/results/store")]
    out: PathBuf,
    /// Scratch folder for the stores (default: a temp folder; it must be on the disk whose
    /// sync is measured, not tmpfs).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Do not pin this process to the server core.
    #[arg(long)]
    no_pin: bool,
}

/// One query's figures in one run.
#[derive(serde::Serialize, Clone)]
pub struct QueryRun {
    pub name: String,
    pub p50_us: f64,
    pub p99_us: f64,
    /// The untimed first answer.
    pub first_us: Option<f64>,
    pub reps: usize,
    pub hits: usize,
    pub answer: Answer,
}

/// One engine at one size in one round.
#[derive(serde::Serialize, Clone)]
pub struct Run {
    pub round: usize,
    pub durability: Durability,
    pub size: usize,
    pub engine: String,
    /// The median over `batched_reps` fresh stores.
    pub batched_per_s: f64,
    pub batched_reps: usize,
    /// The median over up to [`PER_RECORD_MAX_RUNS`] runs.
    pub per_record_per_s: f64,
    pub per_record_count: usize,
    pub queries: Vec<QueryRun>,
    /// fogline: seconds to rebuild the index from the log, and the index's bytes.
    pub rebuild_s: Option<f64>,
    pub index_bytes: Option<usize>,
}

const KINDS: [&str; 4] = ["lidar", "radar", "sonar", "camera"];

fn record(i: u64) -> anyhow::Result<Rec> {
    let kind = KINDS[(i / 1000 % 4) as usize];
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
    let profile = DataProfile::from_pairs(pairs.iter().map(|(a, v)| (*a, Some(v.as_str()))))?;
    Ok(Rec {
        offset: i,
        ts: 1_764_000_000_000_000 + i * 1000,
        topic: format!("site/{}/{kind}", i % 8),
        headers: profile.to_headers()?,
        profile,
        payload: Bytes::from(vec![b'x'; 64]),
    })
}

fn asks(size: usize) -> Vec<(&'static str, Ask)> {
    vec![
        (
            "exact id",
            Ask::new(Kind::Exact, "id", &format!("r{}", size / 2)),
        ),
        ("exact sensor", Ask::new(Kind::Exact, "sensor", "lidar000")),
        ("prefix", Ask::new(Kind::Prefix, "sensor", "lidar00")),
        ("suffix", Ask::new(Kind::Suffix, "sensor", "dar000")),
    ]
}

fn open(engine: &str, dir: &std::path::Path, d: Durability) -> anyhow::Result<Box<dyn Engine>> {
    std::fs::create_dir_all(dir)?;
    Ok(match engine {
        "fogline" => Box::new(Fogline::open(dir, d)?),
        "sqlite" => Box::new(Sqlite::open(dir, d)?),
        "redb" => Box::new(Redb::open(dir)?),
        other => bail!("unknown engine {other}: fogline, sqlite or redb"),
    })
}

/// A batched store is timed on fresh stores until they have taken this long in all (a store
/// of a few records takes microseconds: one timing would be one scheduler tick's luck)...
const BATCHED_BUDGET: Duration = Duration::from_millis(200);
/// ... or this many times; the median is reported.
const BATCHED_MAX_REPS: usize = 9;
/// Likewise, the per-record store runs until its runs took this long in all...
const PER_RECORD_BUDGET: Duration = Duration::from_millis(100);
/// ... or this many runs; the median run's rate is reported.
const PER_RECORD_MAX_RUNS: usize = 5;

/// Writes back every dirty page of the machine (`sync(2)`, untimed) before a timed phase,
/// so that no engine waits behind the writeback another left: a million records stored
/// leave a few hundred MB dirty, and the kernel throttles whoever dirties pages next
/// (fogline's appends to its mapping, SQLite's and redb's writes) while the disk catches up.
fn settle() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// The median of `xs` (the mean of the middle two for an even count).
fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    match xs.len() % 2 {
        0 => (xs[m - 1] + xs[m]) / 2.0,
        _ => xs[m],
    }
}

/// The `q`-quantile (nearest rank) of sorted samples.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    sorted[i - 1]
}

fn time_query(
    e: &mut dyn Engine,
    name: &str,
    ask: &Ask,
    a: &StoreArgs,
) -> anyhow::Result<QueryRun> {
    let t = Instant::now();
    let answer = e.query(ask)?;
    let first_us = t.elapsed().as_secs_f64() * 1e6;
    let mut samples = Vec::with_capacity(a.query_reps);
    let start = Instant::now();
    while samples.len() < a.query_reps && (samples.len() < 5 || start.elapsed() < a.query_time) {
        let t = Instant::now();
        let got = e.query(ask)?;
        samples.push(t.elapsed().as_secs_f64() * 1e6);
        anyhow::ensure!(got == answer, "{name}: the answer changed between runs");
    }
    samples.sort_by(f64::total_cmp);
    Ok(QueryRun {
        name: name.to_string(),
        p50_us: quantile(&samples, 0.5),
        p99_us: quantile(&samples, 0.99),
        first_us: Some(first_us),
        reps: samples.len(),
        hits: answer.0,
        answer,
    })
}

/// Where one run happens: its round, class and size.
struct Slot {
    round: usize,
    durability: Durability,
    size: usize,
}

fn run_one(
    engine: &str,
    at: &Slot,
    recs: &[Rec],
    a: &StoreArgs,
    work: &std::path::Path,
) -> anyhow::Result<Run> {
    let (size, round) = (at.size, at.round);
    let base = work.join(format!("{engine}-{}-{size}-{round}", at.durability.name()));
    let mut fog = None;
    // Fresh stores, each opened (created) before its clock starts, for every engine; the
    // last is kept for the queries and the per-record store.
    let (mut rates, mut spent) = (Vec::new(), Duration::ZERO);
    let (mut e, dir) = loop {
        let dir = base.join(format!("rep{}", rates.len()));
        // Before the open, not after: what the engine's own open left (fogline's pages
        // faulted in ahead, dirty) is part of starting from an open store; a sync after it
        // made each first write to such a page fault again (~5 us, a scratch timer).
        settle();
        let mut e: Box<dyn Engine> = open(engine, &dir, at.durability)?;
        let t = Instant::now();
        e.store(&recs[..size], a.batch)?;
        let took = t.elapsed();
        rates.push(size as f64 / took.as_secs_f64());
        spent += took;
        if rates.len() == BATCHED_MAX_REPS || spent >= BATCHED_BUDGET {
            break (e, dir);
        }
        drop(e);
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    };
    let batched_reps = rates.len();
    let batched_per_s = median(&mut rates);
    let queries = asks(size)
        .iter()
        .map(|(name, ask)| time_query(e.as_mut(), name, ask, a))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if engine == "fogline" {
        drop(e);
        let mut f = Fogline::open(&dir, at.durability)?;
        let t = Instant::now();
        let filed = f.rebuild()?;
        anyhow::ensure!(filed == size, "rebuilt {filed} of {size} records");
        fog = Some((t.elapsed().as_secs_f64(), f.index_bytes()));
        e = Box::new(f);
    }
    // Runs of up to `per_record_max` commits, each timed whole (so an engine's periodic
    // work, such as SQLite's checkpoints, counts), until they took PER_RECORD_BUDGET.
    let (mut n, mut rates, mut spent) = (0, Vec::new(), Duration::ZERO);
    // Charged with its own commits only, not the writeback of the N records stored before.
    // Unlike a sync right after an open, this one also writes back the pages fogline
    // faulted in ahead (at most a MiB), whose first writes then fault again: about 1 ms
    // at most, in the first of runs of 20,000 records, whose median is taken.
    settle();
    while rates.len() < PER_RECORD_MAX_RUNS && spent < PER_RECORD_BUDGET {
        let (t, from) = (Instant::now(), n);
        while n - from < a.per_record_max && t.elapsed() < a.per_record_time {
            e.store(&recs[size + n..size + n + 1], 1)?;
            n += 1;
        }
        let took = t.elapsed();
        rates.push((n - from) as f64 / took.as_secs_f64());
        spent += took;
    }
    let per_record_per_s = median(&mut rates);
    drop(e);
    std::fs::remove_dir_all(&base).with_context(|| format!("removing {}", base.display()))?;
    Ok(Run {
        round,
        durability: at.durability,
        size,
        engine: engine.to_string(),
        batched_per_s,
        batched_reps,
        per_record_per_s,
        per_record_count: n,
        queries,
        rebuild_s: fog.map(|f| f.0),
        index_bytes: fog.map(|f| f.1),
    })
}

pub fn run(a: StoreArgs) -> anyhow::Result<()> {
    for e in &a.engines {
        anyhow::ensure!(
            ["fogline", "sqlite", "redb"].contains(&e.as_str()),
            "unknown engine {e}"
        );
    }
    let max = a.sizes.iter().copied().max().unwrap_or(0);
    let placement = (!a.no_pin).then(Placement::default_for_machine).flatten();
    if let Some(p) = placement {
        pin::pin_current_thread(p.server_core).context("pinning to the server core")?;
    }
    let work = match &a.work_dir {
        Some(w) => w.clone(),
        None => std::env::current_dir()?.join(format!(".store-bench-{}", std::process::id())),
    };
    std::fs::create_dir_all(&work)?;
    let count = max + PER_RECORD_MAX_RUNS * a.per_record_max;
    eprintln!("generating {count} records");
    let recs = (0..count as u64)
        .map(record)
        .collect::<anyhow::Result<Vec<_>>>()?;
    let started = report::Context::now(&a, placement);
    let mut runs = Vec::new();
    for round in 0..a.rounds {
        for &durability in &a.durability {
            for &size in &a.sizes {
                let at = Slot {
                    round,
                    durability,
                    size,
                };
                for k in 0..a.engines.len() {
                    let engine = &a.engines[(k + round) % a.engines.len()];
                    let r = run_one(engine, &at, &recs, &a, &work)?;
                    eprintln!(
                    "round {round} {} size {size:>7} {engine:<7} batched {:>9.0}/s per-record {:>7.0}/s ({}) queries p50 {}",
                    durability.name(),
                    r.batched_per_s,
                    r.per_record_per_s,
                    r.per_record_count,
                    r.queries.iter().map(|q| format!("{:.1}us", q.p50_us)).collect::<Vec<_>>().join(" ")
                );
                    runs.push(r);
                }
            }
        }
    }
    if a.work_dir.is_none() {
        std::fs::remove_dir_all(&work)?;
    }
    report::write(&a, &started, &runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&mut [7.0]), 7.0);
    }

    /// Stored in several batches (fogline's `fsync` storage then flushes on a second thread
    /// and files the durable batch meanwhile), every engine of both classes gives every ask
    /// the same answer, counted by hand, and fogline's log holds every record committed.
    #[test]
    fn batches_store_everything_and_every_engine_answers_alike() {
        let recs: Vec<Rec> = (0..2_500)
            .map(record)
            .collect::<anyhow::Result<_>>()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        for d in [Durability::PowerLoss, Durability::ProcessCrash] {
            let mut answers = Vec::new();
            for engine in ["fogline", "sqlite", "redb"] {
                let mut e = open(
                    engine,
                    &dir.path().join(format!("{engine}-{}", d.name())),
                    d,
                )
                .unwrap();
                e.store(&recs[..2_400], 1_000).unwrap();
                e.store(&recs[2_400..], 1).unwrap();
                let mut all = asks(recs.len());
                // The last record of the last batch, filed after the loop.
                all.push(("last", Ask::new(Kind::Exact, "id", "r2399")));
                let got: Vec<Answer> = all.iter().map(|(_, ask)| e.query(ask).unwrap()).collect();
                answers.push(got);
            }
            // r1250; sensor lidar000: records 0 and 1000 are lidar000 only in the first
            // thousand (kind by thousands), so one; prefix lidar00: ids 0-9; suffix dar000:
            // lidar000 and radar000 (record 1000).
            assert_eq!(answers[0][0], (1, 1_250), "{d:?}");
            assert_eq!(answers[0][1], (1, 0), "{d:?}");
            assert_eq!(answers[0][2], (10, 45), "{d:?}");
            assert_eq!(answers[0][3], (2, 1_000), "{d:?}");
            assert_eq!(answers[0][4], (1, 2_399), "{d:?}");
            assert!(
                answers.iter().all(|a| *a == answers[0]),
                "{d:?}: {answers:?}"
            );
        }
        let mut f = Fogline::open(
            &dir.path().join("fogline-power-loss"),
            Durability::PowerLoss,
        )
        .unwrap_or_else(|e| panic!("reopen: {e}"));
        assert_eq!(f.rebuild().unwrap(), 2_500, "every record committed");
    }
}
