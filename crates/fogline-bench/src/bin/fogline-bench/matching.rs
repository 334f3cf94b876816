//! `fogline-bench match`: run one multi-pattern matcher over packets or a file, single thread, and
//! report matches and throughput. The same comparison as `fogline-match-bench`, one cell at a
//! time.
//!
//! Patterns use the shared format (`<hex>\t<nocase>` per line, id = line number); `--packets
//! PREFIX` reads `PREFIX.bin` and `PREFIX.lens` and matches packet by packet; `--file PATH`
//! matches the whole file as one buffer.

use std::path::PathBuf;

use anyhow::Context;
use fogline_match_compare::{load_packets, load_patterns, run_engine, EngineKind, Input, Mode};

/// Arguments of `fogline-bench match`.
#[derive(clap::Args)]
pub struct MatchArgs {
    /// Pattern file (hex bytes, tab, nocase flag per line).
    #[arg(long)]
    patterns: PathBuf,
    /// Packet corpus prefix: reads PREFIX.bin and PREFIX.lens, matches per packet.
    #[arg(long, conflicts_with = "file", required_unless_present = "file")]
    packets: Option<PathBuf>,
    /// A file matched as one buffer.
    #[arg(long)]
    file: Option<PathBuf>,
    /// fogline, fogline-callback, hyperscan, aho-corasick (= aho-corasick-nfa),
    /// aho-corasick-dfa or daachorse.
    #[arg(long, default_value = "fogline")]
    engine: String,
    /// Passes over the input; the fastest is reported.
    #[arg(long, default_value_t = 1)]
    reps: usize,
    /// Print `{"engine","patterns","packets","bytes","matches","build_ms","seconds","gbps"}`.
    #[arg(long)]
    json: bool,
}

/// Runs the subcommand.
pub fn run(args: MatchArgs) -> anyhow::Result<()> {
    let kind = EngineKind::parse(&args.engine)?;
    let pats = load_patterns(&args.patterns)
        .with_context(|| format!("loading patterns {}", args.patterns.display()))?;
    let (input, mode) = match (&args.packets, &args.file) {
        (Some(prefix), _) => (load_packets(prefix)?, Mode::PerPacket),
        (None, Some(path)) => {
            let data =
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            (Input::whole(path.display().to_string(), data), Mode::Whole)
        }
        (None, None) => anyhow::bail!("give --packets PREFIX or --file PATH"),
    };
    let set = args.patterns.display().to_string();
    let row = run_engine(kind, &set, &pats, &input, mode, args.reps)?;
    if args.json {
        let v = serde_json::json!({
            "engine": row.engine,
            "patterns": row.patterns,
            "packets": row.packets,
            "bytes": row.bytes,
            "matches": row.matches,
            "build_ms": row.build_ms,
            "seconds": row.seconds,
            "gbps": row.gbps,
        });
        println!("{v}");
    } else {
        println!(
            "{}: {} patterns, {} packets, {} bytes: {} matches in {:.4} s ({:.3} GB/s), built in {:.1} ms",
            row.engine,
            row.patterns,
            row.packets,
            row.bytes,
            row.matches,
            row.seconds,
            row.gbps,
            row.build_ms
        );
    }
    Ok(())
}
