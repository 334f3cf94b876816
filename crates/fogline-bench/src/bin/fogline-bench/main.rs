//! `fogline-bench`: the tools that measure fogline against its peers, kept out of the edge
//! binary. `run` drives the benchmark scenarios (it starts `fogline serve` from the `fogline`
//! executable beside this one, or `--fogline PATH`), `match` compares the multi-pattern
//! matcher with Hyperscan, aho-corasick and daachorse, `detect` scores the anomaly
//! detectors on the Numenta Anomaly Benchmark, `store` compares the queryable store with
//! SQLite and redb, `route` the broker's routing by data profile, `bridge` the Kafka bridge against Kafka's own producer, and `rules` (feature `peers`) measures SQL
//! rules on a live MQTT stream against eKuiper; `security` (feature `peers`) what TLS and an
//! ACL cost on the MQTT path, fogline over TLS against Mosquitto.

mod bridge;
#[cfg(feature = "peers")]
mod child;
mod detect;
mod matching;
mod route;
#[cfg(feature = "peers")]
mod rules;
mod run;
#[cfg(feature = "peers")]
mod security;
mod store;

use clap::{Parser, Subcommand};

/// fogline-bench: benchmark fogline against its peers.
#[derive(Parser)]
#[command(name = "fogline-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a benchmark scenario (core, seed000, seed002, seed003, seed004, mqtt; `list`,
    /// `report --out DIR`).
    Run(run::BenchArgs),
    /// Match a pattern set against packets or a file with one engine; report matches and GB/s.
    Match(matching::MatchArgs),
    /// Run the anomaly detectors over the NAB corpus and print the scoreboard.
    Detect(detect::DetectArgs),
    /// The queryable store against SQLite and redb: store rate and exact and wildcard query
    /// latency from 1 to 1M stored records (paper 004, Fig. 5-7).
    Store(store::StoreArgs),
    /// The Kafka bridge against Kafka's own producer: forwarding rate at 100 B and 1 KiB, and
    /// catching up after an outage (issue 34).
    Bridge(bridge::BridgeArgs),
    /// Routing by data profile in the broker against the number of interests (1 to
    /// 100,000) and their terms (1 to 6): issue 33, R-Pulsar's Fig. 9-10.
    Route(route::RouteArgs),
    /// SQL rules on a live MQTT stream: records/s through a filter and a tumbling-window rule
    /// and memory per rule, fogline and (with --ekuiper) eKuiper side by side.
    #[cfg(feature = "peers")]
    Rules(rules::RulesArgs),
    /// MQTT over TLS, fogline against Mosquitto with the same certificates, and fogline's
    /// plain MQTT path without and with an ACL of 100 rules: throughput and p50 (issue 35).
    #[cfg(feature = "peers")]
    Security(security::SecurityArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("FOGLINE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Match(args) => matching::run(args),
        Command::Detect(args) => detect::run(args),
        Command::Store(args) => store::run(args),
        Command::Route(args) => route::run(args),
        Command::Bridge(args) => bridge::run(args),
        #[cfg(feature = "peers")]
        Command::Rules(args) => rules::run(args),
        #[cfg(feature = "peers")]
        Command::Security(args) => security::run(args),
    }
}

/// A tokio runtime of `threads` workers; one worker means a single-threaded runtime.
fn runtime(threads: usize) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut b = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(threads);
        b
    };
    b.enable_all();
    Ok(b.build()?)
}
