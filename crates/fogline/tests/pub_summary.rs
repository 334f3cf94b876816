//! `fogline pub --ack --json` prints its summary however the run ends: when the server dies
//! mid-run, the acknowledged count is printed, and every record it counts is stored.

mod support;

use std::ffi::OsStr;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn the_acked_count_survives_a_server_that_dies() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut node = support::serve([OsStr::new("--data-dir"), data.as_os_str()]);
    let publisher = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .args([
            "pub",
            "sum/t",
            "--count",
            "100000000",
            "--size",
            "64",
            "--ack",
            "--json",
        ])
        .args(["--server", &node.native])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fogline pub runs");
    std::thread::sleep(Duration::from_millis(1500));
    node.kill();
    let out = publisher.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "no summary ({e}): {stdout:?} {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let acked = summary["acked"].as_u64().unwrap();
    assert!(acked > 0, "{summary}");
    assert!(
        summary["error"].is_string(),
        "the run stopped early: {summary}"
    );
    assert!(!out.status.success());
    // Every record counted as acknowledged is stored.
    let node = support::serve([OsStr::new("--data-dir"), data.as_os_str()]);
    let info = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .args([
            "stream",
            "info",
            "default",
            "--json",
            "--server",
            &node.native,
        ])
        .output()
        .unwrap();
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    let stored = info["records"].as_u64().unwrap();
    assert!(stored >= acked, "{acked} acknowledged, {stored} stored");
}
