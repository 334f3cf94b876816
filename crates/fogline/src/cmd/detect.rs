//! `fogline detect`: run the built-in anomaly detectors over a NAB corpus and
//! print the scoreboard (all three profiles) with the cost per point.
//!
//! `--results DIR` also scores detector outputs stored in NAB's results layout
//! (`DIR/<detector>/<category>/<detector>_<file>.csv`), which checks the scorer
//! against NAB's published numbers.

use anyhow::Context;
use fogline_detect::nab::{evaluate, results, run_detector, BoardRow, Corpus};
use std::path::PathBuf;

/// Arguments of `fogline detect`.
#[derive(clap::Args)]
pub struct DetectArgs {
    /// NAB directory holding data/, labels/combined_windows.json and config/profiles.json.
    #[arg(long)]
    nab: PathBuf,
    /// Run only this detector (default: all of them).
    #[arg(long)]
    detector: Option<String>,
    /// Print `{"detectors":[{"name","standard","reward_low_fp","reward_low_fn","ns_per_point"}]}`.
    #[arg(long)]
    json: bool,
    /// Also score the detector outputs under this NAB-style results directory.
    #[arg(long)]
    results: Option<PathBuf>,
}

/// Runs the subcommand.
pub fn run(args: DetectArgs) -> anyhow::Result<()> {
    let corpus = Corpus::load(&args.nab)
        .with_context(|| format!("loading NAB corpus from {}", args.nab.display()))?;
    let names: Vec<&str> = match &args.detector {
        Some(n) => {
            if fogline_detect::by_name(n).is_none() {
                anyhow::bail!(
                    "unknown detector {n}; known: {}",
                    fogline_detect::DETECTOR_NAMES.join(", ")
                );
            }
            vec![n.as_str()]
        }
        None => fogline_detect::DETECTOR_NAMES.to_vec(),
    };
    let mut rows = Vec::new();
    for name in names {
        let make = || fogline_detect::by_name(name).expect("name checked above");
        let (scores, ns) = run_detector(&corpus, &make);
        let profiles = evaluate(&corpus, &scores).with_context(|| format!("scoring {name}"))?;
        rows.push(BoardRow::new(name, &profiles, ns));
    }
    if let Some(dir) = &args.results {
        for name in results::detector_names(dir)? {
            let scores = results::load_scores(dir, &name, &corpus)
                .with_context(|| format!("reading results of {name}"))?;
            let profiles = evaluate(&corpus, &scores).with_context(|| format!("scoring {name}"))?;
            rows.push(BoardRow::new(&format!("nab:{name}"), &profiles, f64::NAN));
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "detectors": rows }))?
        );
        return Ok(());
    }
    println!(
        "NAB corpus: {} files, {} rows, {} windows",
        corpus.files.len(),
        corpus.row_count(),
        corpus.window_count()
    );
    println!(
        "{:<28} {:>9} {:>14} {:>14} {:>12}",
        "detector", "standard", "reward_low_FP", "reward_low_FN", "ns/point"
    );
    for r in &rows {
        let ns = if r.ns_per_point.is_nan() {
            "-".to_string()
        } else {
            format!("{:.0}", r.ns_per_point)
        };
        println!(
            "{:<28} {:>9.2} {:>14.2} {:>14.2} {:>12}",
            r.name, r.standard, r.reward_low_fp, r.reward_low_fn, ns
        );
    }
    Ok(())
}
