//! `fogline-bench run` stopped by SIGTERM (as `bench/long-run.sh` is stopped between sittings):
//! it keeps every run measured so far, byte for byte, writes their summary, says how to
//! resume in one line and exits with 130.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn an_interrupted_run_keeps_its_runs_and_exits_130() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("results");
    let child = Command::new(env!("CARGO_BIN_EXE_fogline-bench"))
        .args([
            "run",
            "core",
            "--quick",
            "--systems",
            "memory",
            "--rate",
            "max",
            "--size",
            "22",
            "--duration",
            "1s",
            "--repetitions",
            "100",
            "--no-pin",
            "--no-progress",
            "--out",
        ])
        .arg(&out)
        .env("RUST_BACKTRACE", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("fogline-bench starts");
    let raw = out.join("results.json");
    let runs = || -> usize {
        let Ok(text) = std::fs::read_to_string(&raw) else {
            return 0;
        };
        let report: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        report["results"].as_array().map_or(0, Vec::len)
    };
    // The checkpoint exists from the start; wait for one measured run in it.
    let t = Instant::now();
    while runs() == 0 {
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "no run checkpointed after 2 minutes"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let done = child.wait_with_output().expect("fogline-bench ends");
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted; peers stopped; the runs measured so far are in"),
        "{stderr}"
    );
    assert!(stderr.contains("add --resume"), "{stderr}");
    assert!(!stderr.contains("backtrace"), "{stderr}");
    let kept = runs();
    assert!((1..100).contains(&kept), "{kept} runs kept");
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary.md");
    assert!(summary.contains("| memory |"), "{summary}");
}
