//! The fogline-match benchmark: every engine on every pattern set and input, single thread, in
//! one run, passes interleaved across engines (see `run::run_cell`); writes `results.json` and
//! `results.md` to `--out` (default: print Markdown).
//!
//! ```text
//! fogline-match-bench [--data DIR] [--out DIR] [--reps N] [--sets a,b] [--inputs a,b] [--engines a,b]
//!                     [--modes per-packet,whole]
//! ```
//!
//! Pattern sets: `et2017_all`, `et2017_fast`, `et2017_fast4` (files in `DIR/patterns`). Inputs:
//! `corpus_http`, `corpus_all` (`DIR/traffic`) and `random` (40 MB of xorshift bytes, seed 1,
//! cut into 1,460-byte packets for the per-packet mode); each per packet and whole.

use std::path::PathBuf;

use fogline_match_compare::{
    load_packets, load_patterns, random_bytes, report, run_cell, EngineKind, Error, Input, Mode,
};

struct Args {
    data: PathBuf,
    out: Option<PathBuf>,
    reps: usize,
    sets: Vec<String>,
    inputs: Vec<String>,
    engines: Vec<EngineKind>,
    modes: Vec<Mode>,
}

fn list(v: &str) -> Vec<String> {
    v.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        data: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
        out: None,
        reps: 3,
        sets: list("et2017_fast4,et2017_fast,et2017_all"),
        inputs: list("corpus_http,corpus_all,random"),
        engines: EngineKind::all(),
        modes: vec![Mode::PerPacket, Mode::Whole],
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--data" => a.data = PathBuf::from(val()?),
            "--out" => a.out = Some(PathBuf::from(val()?)),
            "--reps" => a.reps = val()?.parse().map_err(|e| format!("--reps: {e}"))?,
            "--sets" => a.sets = list(&val()?),
            "--inputs" => a.inputs = list(&val()?),
            "--engines" => {
                a.engines = list(&val()?)
                    .iter()
                    .map(|s| EngineKind::parse(s).map_err(|e| e.to_string()))
                    .collect::<Result<_, _>>()?
            }
            "--modes" => {
                a.modes = list(&val()?)
                    .iter()
                    .map(|m| match m.as_str() {
                        "per-packet" => Ok(Mode::PerPacket),
                        "whole" => Ok(Mode::Whole),
                        _ => Err(format!("unknown mode {m} (per-packet, whole)")),
                    })
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    Ok(a)
}

fn input(data: &std::path::Path, name: &str) -> Result<Input, Error> {
    if name == "random" {
        let bytes = random_bytes(40_000_000, 1);
        let mut lens = vec![1460; bytes.len() / 1460];
        lens.push(bytes.len() % 1460);
        lens.retain(|&l| l > 0);
        return Ok(Input {
            name: "random".into(),
            data: bytes,
            lens,
        });
    }
    load_packets(&data.join("traffic").join(name))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = parse()?;
    let mut rows = Vec::new();
    for name in &a.inputs {
        let inp = input(&a.data, name)?;
        for set in &a.sets {
            let pats = load_patterns(&a.data.join("patterns").join(format!("{set}.tsv")))?;
            for &mode in &a.modes {
                for row in run_cell(&a.engines, set, &pats, &inp, mode, a.reps)? {
                    eprintln!(
                        "{:<18} {:<13} {:<12} {:<10?} {:>10} matches {:>8.3} GB/s build {:>8.1} ms",
                        row.engine,
                        row.set,
                        row.input,
                        row.mode,
                        row.matches,
                        row.gbps,
                        row.build_ms
                    );
                    rows.push(row);
                }
            }
        }
    }
    let md = report::markdown(&rows);
    match &a.out {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            std::fs::write(dir.join("results.json"), report::json(&rows))?;
            std::fs::write(dir.join("results.md"), &md)?;
        }
        None => println!("{md}"),
    }
    Ok(())
}
