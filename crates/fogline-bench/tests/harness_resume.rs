//! The harness's checkpoint after every run, and `--resume` of an interrupted run, against
//! the in-process driver.

use std::time::Duration;

use fogline_bench::cell::{Budget, CellSpec, Rate};
use fogline_bench::harness::{self, HarnessOptions, RunReport, Skipped};
use fogline_bench::report;
use fogline_bench::scenario::Scenario;
use fogline_bench::System;

mod common;

fn scenario() -> Scenario {
    let cell = |label: &str, size| {
        let mut s = CellSpec::new(label, size, Rate::Max, Budget::Messages(300));
        s.straggler_timeout = Duration::from_millis(200);
        s
    };
    common::scenario(
        "resume-test",
        vec![cell("small", 64), cell("large", 4096)],
        2,
        System::Memory,
    )
}

fn options(dir: &std::path::Path, resume: Option<RunReport>) -> HarnessOptions {
    let mut o = common::options(dir, System::Memory);
    o.resume = resume;
    o.checkpoint = Some(dir.join("out"));
    o
}

fn runs(r: &RunReport) -> Vec<(String, u32, u64)> {
    let mut v: Vec<_> = r
        .results
        .iter()
        .map(|c| (c.spec.label.clone(), c.repetition, c.sent))
        .collect();
    v.sort();
    v
}

/// A complete run of the test scenario into `dir/out` (2 cells x 2 repetitions).
async fn full_run(dir: &std::path::Path) -> RunReport {
    let full = harness::run(&scenario(), &options(dir, None)).await;
    assert_eq!(full.results.len(), 4, "{:?}", full.skipped);
    full
}

#[tokio::test]
async fn every_run_is_checkpointed() {
    let dir = tempfile::tempdir().unwrap();
    let full = full_run(dir.path()).await;
    let saved = report::read_json(&dir.path().join("out/results.json")).unwrap();
    assert_eq!(runs(&saved), runs(&full));
    assert_eq!(saved.meta.scenario, "resume-test");
    assert!(saved.meta.resumed.is_empty());
    assert!(!dir.path().join("out/results.json.tmp").exists());
}

#[tokio::test]
async fn resume_measures_only_the_missing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario();
    let full = full_run(dir.path()).await;

    // As if interrupted after the first run, with a failure recorded for the second cell.
    let mut partial = full.clone();
    partial.results.truncate(1);
    let kept = (
        partial.results[0].spec.label.clone(),
        partial.results[0].repetition,
        partial.results[0].elapsed_seconds,
    );
    partial.skipped.push(Skipped {
        system: "memory".into(),
        cell: "large".into(),
        reason: "did not finish (hung)".into(),
    });
    let resumed = harness::run(&sc, &options(dir.path(), Some(partial))).await;
    assert_eq!(runs(&resumed), runs(&full));
    // The kept run is the earlier measurement, not a new one.
    let first = &resumed.results[0];
    assert_eq!(
        (
            first.spec.label.clone(),
            first.repetition,
            first.elapsed_seconds
        ),
        kept
    );
    assert_eq!(resumed.meta.date, full.meta.date);
    assert_eq!(resumed.meta.resumed.len(), 1);
    // The retried cell measured this time: its old failure no longer stands.
    assert!(resumed.skipped.is_empty(), "{:?}", resumed.skipped);
    let saved = report::read_json(&dir.path().join("out/results.json")).unwrap();
    assert_eq!(saved.meta.resumed.len(), 1);
    assert!(report::markdown(&saved).contains("resumed"));

    // The same build resumed it: the time alone is recorded.
    assert!(!resumed.meta.resumed[0].contains("executable"));

    // Resuming a finished run measures nothing more.
    let again = harness::run(&sc, &options(dir.path(), Some(resumed.clone()))).await;
    assert_eq!(runs(&again), runs(&full));
    let elapsed =
        |r: &RunReport| -> Vec<f64> { r.results.iter().map(|c| c.elapsed_seconds).collect() };
    assert_eq!(elapsed(&again), elapsed(&resumed));
}

/// A fresh run replaces an earlier run's results.json before it measures anything, so an
/// interruption cannot leave the old runs looking like this run's.
#[tokio::test]
async fn a_fresh_run_replaces_old_results_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let sc = scenario();
    full_run(dir.path()).await;
    let mut opts = options(dir.path(), None);
    opts.systems.clear(); // nothing to measure: only the start-of-run checkpoint is written
    let fresh = harness::run(&sc, &opts).await;
    assert!(fresh.results.is_empty());
    let saved = report::read_json(&dir.path().join("out/results.json")).unwrap();
    assert!(saved.results.is_empty(), "old runs still in the folder");
}

/// Repetitions come in rounds: every cell's first run before any cell's second, so drift
/// over a long run is shared by all cells and systems, and an interruption leaves whole
/// rounds.
#[tokio::test]
async fn repetitions_run_in_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let full = full_run(dir.path()).await;
    let order: Vec<(u32, &str)> = full
        .results
        .iter()
        .map(|c| (c.repetition, c.spec.label.as_str()))
        .collect();
    assert_eq!(
        order,
        [(1, "small"), (1, "large"), (2, "small"), (2, "large")]
    );
}

/// A rebuild of the same commit that resumes a run is named with the resume time.
#[tokio::test]
async fn a_rebuild_that_resumes_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let mut partial = full_run(dir.path()).await;
    partial.results.truncate(1);
    let mut opts = options(dir.path(), Some(partial.clone()));
    opts.build.exe = format!("{}-rebuilt", partial.meta.build.exe);
    let resumed = harness::run(&scenario(), &opts).await;
    assert_eq!(resumed.results.len(), 4);
    assert_eq!(
        resumed.meta.build, partial.meta.build,
        "the first build stays"
    );
    let when = &resumed.meta.resumed[0];
    assert!(
        when.ends_with(&format!("by executable `{}`", opts.build.exe)),
        "{when}"
    );
}
