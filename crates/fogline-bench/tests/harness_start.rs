//! A system that does not start is skipped for that round only (the skip names the round) and
//! tried again in the next; one that is not installed is reported once.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use fogline_bench::cell::{Budget, CellSpec, Rate};
use fogline_bench::harness::{self, HarnessOptions};
use fogline_bench::scenario::Scenario;

mod common;
use fogline_bench::System;

fn scenario() -> Scenario {
    let mut cell = CellSpec::new("c", 64, Rate::Max, Budget::Messages(100));
    cell.straggler_timeout = Duration::from_millis(200);
    common::scenario("start-test", vec![cell], 3, System::Fogline)
}

fn options(dir: &Path, exe: Option<std::path::PathBuf>) -> HarnessOptions {
    let mut o = common::options(dir, System::Fogline);
    o.peers.fogline_exe = exe;
    o
}

#[tokio::test]
async fn a_failed_start_is_retried_in_every_round() {
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts");
    let exe = dir.path().join("fake-fogline");
    std::fs::write(
        &exe,
        format!(
            "#!/bin/sh\necho start >> {}\necho cannot bind >&2\nexit 1\n",
            starts.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let rep = harness::run(&scenario(), &options(dir.path(), Some(exe))).await;
    assert!(rep.results.is_empty());
    let tries = std::fs::read_to_string(&starts).unwrap().lines().count();
    assert_eq!(tries, 3, "one start per round");
    let reasons: Vec<&str> = rep.skipped.iter().map(|s| s.reason.as_str()).collect();
    assert_eq!(reasons.len(), 3, "one skip per round: {reasons:?}");
    for (i, r) in reasons.iter().enumerate() {
        assert!(r.starts_with(&format!("repetition {}: ", i + 1)), "{r}");
        assert!(r.contains("cannot bind"), "{r}");
    }
}

#[tokio::test]
async fn a_missing_system_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let rep = harness::run(&scenario(), &options(dir.path(), None)).await;
    assert!(rep.results.is_empty());
    assert_eq!(rep.skipped.len(), 1, "{:?}", rep.skipped);
    assert!(
        rep.skipped[0].reason.contains("no fogline executable"),
        "{:?}",
        rep.skipped
    );
}
