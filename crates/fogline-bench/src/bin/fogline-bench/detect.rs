//! `fogline-bench detect`: run the built-in anomaly detectors over a NAB corpus and
//! print the scoreboard (all three profiles) with the cost per point; with
//! `--traces`, evaluate the event-trace detectors on generated traces.
//!
//! `--results DIR` also scores detector outputs stored in NAB's results layout
//! (`DIR/<detector>/<category>/<detector>_<file>.csv`), at the optimised
//! threshold and at the thresholds NAB recorded in
//! `DIR/<detector>/<detector>_<profile>_scores.csv`, which checks the scorer
//! against NAB's published numbers.

use anyhow::Context;
use fogline_detect::nab::{evaluate, evaluate_at, results, run_detector, BoardRow, Corpus};
use fogline_detect::trace::evaluate as traces;
use std::path::{Path, PathBuf};

/// Arguments of `fogline-bench detect`.
#[derive(clap::Args)]
pub struct DetectArgs {
    /// NAB directory holding data/, labels/combined_windows.json and config/profiles.json.
    #[arg(long, required_unless_present = "traces")]
    nab: Option<PathBuf>,
    /// Run only this detector (default: all of them).
    #[arg(long)]
    detector: Option<String>,
    /// Print JSON: `{"detectors":[{"name","standard","reward_low_fp","reward_low_fn","ns_per_point"}]}`
    /// (plus `"traces":[...]` with --traces).
    #[arg(long)]
    json: bool,
    /// Also score the detector outputs under this NAB-style results directory.
    #[arg(long, requires = "nab")]
    results: Option<PathBuf>,
    /// Evaluate the trace detectors (arrival curves, spectral) on generated traces.
    #[arg(long)]
    traces: bool,
}

/// Runs the subcommand.
pub fn run(args: DetectArgs) -> anyhow::Result<()> {
    let mut out = serde_json::Map::new();
    if let Some(dir) = &args.nab {
        let rows = scoreboard(dir, &args)?;
        if !args.json {
            print_board(&rows);
        }
        out.insert("detectors".into(), serde_json::to_value(&rows)?);
    }
    if args.traces {
        let rows = traces::run(&traces::Config::default());
        if !args.json {
            print_traces(&rows);
        }
        out.insert("traces".into(), serde_json::to_value(&rows)?);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    }
    Ok(())
}

fn scoreboard(dir: &Path, args: &DetectArgs) -> anyhow::Result<Vec<BoardRow>> {
    let corpus =
        Corpus::load(dir).with_context(|| format!("loading NAB corpus from {}", dir.display()))?;
    if !args.json {
        println!(
            "NAB corpus: {} files, {} rows, {} windows",
            corpus.files.len(),
            corpus.row_count(),
            corpus.window_count()
        );
    }
    let names: Vec<&str> = match &args.detector {
        Some(n) if fogline_detect::by_name(n).is_none() => {
            anyhow::bail!(
                "unknown detector {n}; known: {}",
                fogline_detect::DETECTOR_NAMES.join(", ")
            )
        }
        Some(n) => vec![n.as_str()],
        None => fogline_detect::DETECTOR_NAMES.to_vec(),
    };
    let mut rows = Vec::new();
    for name in names {
        let make = || fogline_detect::by_name(name).expect("name checked above");
        let (scores, ns) = run_detector(&corpus, &make);
        let profiles = evaluate(&corpus, &scores).with_context(|| format!("scoring {name}"))?;
        rows.push(BoardRow::new(name, &profiles, ns));
    }
    if let Some(results_dir) = &args.results {
        for name in results::detector_names(results_dir)? {
            let scores = results::load_scores(results_dir, &name, &corpus)
                .with_context(|| format!("reading results of {name}"))?;
            let profiles = evaluate(&corpus, &scores).with_context(|| format!("scoring {name}"))?;
            rows.push(BoardRow::new(&format!("nab:{name}"), &profiles, f64::NAN));
            // NAB scored some detectors at thresholds it had recorded earlier
            // rather than the optimum; rescore at those too when present.
            if let Some(t) = results::recorded_thresholds(results_dir, &name, &corpus) {
                let profiles =
                    evaluate_at(&corpus, &scores, &t).with_context(|| format!("scoring {name}"))?;
                rows.push(BoardRow::new(
                    &format!("nab:{name}@recorded"),
                    &profiles,
                    f64::NAN,
                ));
            }
        }
    }
    Ok(rows)
}

fn print_board(rows: &[BoardRow]) {
    println!(
        "{:<32} {:>9} {:>14} {:>14} {:>12}",
        "detector", "standard", "reward_low_FP", "reward_low_FN", "ns/point"
    );
    for r in rows {
        let ns = if r.ns_per_point.is_nan() {
            "-".to_string()
        } else {
            format!("{:.0}", r.ns_per_point)
        };
        println!(
            "{:<32} {:>9.2} {:>14.2} {:>14.2} {:>12}",
            r.name, r.standard, r.reward_low_fp, r.reward_low_fn, ns
        );
    }
}

fn print_traces(rows: &[traces::Row]) {
    println!(
        "{:<16} {:<16} {:>9} {:>7} {:>14} {:>10}",
        "detector", "case", "flagged", "rate", "other alarms", "ns/event"
    );
    for r in rows {
        println!(
            "{:<16} {:<16} {:>5}/{:<3} {:>6.0}% {:>14} {:>10.0}",
            r.detector,
            r.case,
            r.flagged,
            r.total,
            100.0 * r.flagged as f64 / r.total.max(1) as f64,
            r.false_alarms,
            r.ns_per_event
        );
    }
}
