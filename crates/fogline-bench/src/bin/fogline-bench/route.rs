//! `fogline-bench route`: the cost of routing a record by its data profile in the broker,
//! against the number of interest subscriptions (1 to 100,000) and the number of terms each
//! has (1 to 6) — issue 33 point 2, R-Pulsar's Fig. 9-10 (paper 004, V-4).
//!
//! Workload: `fogline_profile::workload` (each record satisfies 1% of the interests, each
//! interest has `d` terms of six kinds). For each cell a memory-storage broker gets `n`
//! subscriptions on `#` with an interest each (drop-oldest queues, drained after every
//! round) and records are published one per batch, unacknowledged, each with the headers of
//! a profile of the next cluster; the time is `Broker::publish_unacked` per record (header
//! parsing, the index, and queueing for the 1% of subscriptions that want it), median of
//! `--rounds` rounds of ~50 ms. Beside it, the same records routed to `n` plain
//! subscriptions of which 1% match by topic (`plain`), the trie's cost at the same fan-out.
//! This process runs pinned to the server core.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use fogline_bench::pin::{self, Placement};
use fogline_broker::{
    Batch, Broker, BrokerConfig, Handoff, SlowConsumerPolicy, StorageMode, SubscribeOptions,
    Subscription,
};
use fogline_profile::workload::{interest, profile, CLUSTERS};
use fogline_wire::RecordBlock;
use tokio::sync::Notify;

/// Arguments of `fogline-bench route`.
#[derive(clap::Args, Debug)]
pub struct RouteArgs {
    /// Numbers of interest subscriptions, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,10,100,1000,10000,100000"
    )]
    sizes: Vec<usize>,
    /// Rounds per cell (the median is reported).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Where summary.md goes (printed only when absent).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn broker() -> Broker {
    let config = BrokerConfig {
        storage: StorageMode::Memory,
        streams: vec![fogline_broker::StreamConfig::new(
            "none",
            vec!["none/#".into()],
        )],
        ..BrokerConfig::default()
    };
    Broker::open(config).expect("a memory broker").0
}

/// One record batch per cluster: headers of its profile, a 16-byte payload.
fn batches(d: usize, topic_of: impl Fn(usize) -> String) -> Vec<(String, Bytes)> {
    (0..CLUSTERS)
        .map(|k| {
            let c = k * 37 % CLUSTERS;
            let h = profile(c, d).to_headers().expect("headers");
            (topic_of(c), h)
        })
        .collect()
}

/// Median microseconds per record over `rounds` rounds of ~50 ms.
fn time(
    rt: &tokio::runtime::Runtime,
    b: &Broker,
    subs: &[Arc<Subscription>],
    records: &[(String, Bytes)],
    rounds: usize,
) -> f64 {
    let publish = |k: usize| {
        let (topic, headers) = &records[k % records.len()];
        let batch = Batch {
            topic: topic.as_str().into(),
            records: RecordBlock::single(0, headers, b"0123456789abcdef").expect("a record"),
            timestamp: 1,
            priority: false,
            origin: 0,
        };
        rt.block_on(b.publish_unacked(batch, Handoff::Queue))
            .expect("published");
    };
    let drain = || {
        let mut out = Vec::new();
        for s in subs {
            s.queue().drain(&mut out, usize::MAX);
            out.clear();
        }
    };
    // Calibrate: as many records as take ~50 ms.
    let start = Instant::now();
    let mut per_round = 0;
    while start.elapsed() < Duration::from_millis(50) {
        publish(per_round);
        per_round += 1;
    }
    drain();
    let mut us: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for k in 0..per_round {
                publish(k);
            }
            let e = t.elapsed().as_secs_f64() * 1e6 / per_round as f64;
            drain();
            e
        })
        .collect();
    us.sort_by(f64::total_cmp);
    us[us.len() / 2]
}

/// Runs `fogline-bench route`.
pub fn run(args: RouteArgs) -> anyhow::Result<()> {
    // Counted before pinning: afterwards this process may use one.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let core = Placement::default_for_machine().map_or(0, |p| p.server_core);
    pin::pin_current_thread(core)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let waker = Arc::new(Notify::new());
    let opts = |i: Option<fogline_profile::Interest>| SubscribeOptions {
        policy: Some(SlowConsumerPolicy::DropOldest),
        interest: i,
        ..SubscribeOptions::default()
    };
    let mut rows = Vec::new();
    for &n in &args.sizes {
        let mut cells = Vec::new();
        for d in 1..=6 {
            let b = broker();
            let subs: Vec<_> = (0..n)
                .map(|i| {
                    b.subscribe("#", 0, opts(Some(interest(i, d))), waker.clone())
                        .expect("subscribed")
                })
                .collect();
            let records = batches(d, |_| "site/a".to_string());
            cells.push(time(&rt, &b, &subs, &records, args.rounds));
            eprintln!("n={n} d={d}: {:.2} us/record", cells.last().unwrap());
        }
        // Plain subscriptions at the same fan-out: subscription i on its cluster's topic.
        let b = broker();
        let subs: Vec<_> = (0..n)
            .map(|i| {
                let c = i * 7 % CLUSTERS;
                b.subscribe(&format!("site/c{c}"), 0, opts(None), waker.clone())
                    .expect("subscribed")
            })
            .collect();
        let records = batches(0, |c| format!("site/c{c}"));
        let plain = time(&rt, &b, &subs, &records, args.rounds);
        eprintln!("n={n} plain: {plain:.2} us/record");
        rows.push((n, cells, plain));
    }
    let mut md = String::new();
    md.push_str("# route: routing a record by its data profile in the broker\n\n");
    md.push_str(&format!(
        "- Command: `fogline-bench route {}`\n- Finished: {}\n- Machine: {} cores, load average {}; this process pinned to core {}\n- Rounds per cell: {} (median shown), ~50 ms each\n\n",
        std::env::args().skip(2).collect::<Vec<_>>().join(" "),
        humantime::format_rfc3339_seconds(std::time::SystemTime::now()),
        cores,
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default().trim(),
        core,
        args.rounds
    ));
    md.push_str("Microseconds per record through `Broker::publish_unacked` (headers parsed, the interest index, queueing for the 1% of subscriptions that want it); `plain`: as many plain subscriptions, 1% matching by topic.\n\n");
    md.push_str("| interests | d=1 | d=2 | d=3 | d=4 | d=5 | d=6 | d=6 / d=1 | plain |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (n, cells, plain) in &rows {
        let c: Vec<String> = cells.iter().map(|v| format!("{v:.2}")).collect();
        md.push_str(&format!(
            "| {n} | {} | {:.2}x | {plain:.2} |\n",
            c.join(" | "),
            cells[5] / cells[0]
        ));
    }
    match &args.out {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            std::fs::write(dir.join("summary.md"), &md)?;
            eprintln!("wrote {}", dir.join("summary.md").display());
        }
        None => print!("{md}"),
    }
    Ok(())
}
