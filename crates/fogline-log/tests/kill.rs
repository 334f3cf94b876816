//! A writer process killed with SIGKILL mid-append loses no committed record (mmap storage).
//!
//! The test binary re-runs itself as the writer (`child_writer`, active only when the
//! environment variable is set), reads the offsets it reports after each commit, kills it at
//! a random moment and checks the directory.

mod common;

use common::*;
use fogline_log::{Log, Storage};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

const DIR_VAR: &str = "FOGLINE_LOG_KILL_TEST_DIR";
const SEGMENT: u64 = 64 << 10;

#[test]
fn child_writer() {
    let Ok(dir) = std::env::var(DIR_VAR) else {
        return;
    };
    let (mut log, _) = Log::open(file_opts(dir.as_ref(), Storage::Mmap, SEGMENT)).unwrap();
    let mut out = std::io::stdout().lock();
    let mut next = log.next_offset();
    loop {
        let batch = 1 + next % 37;
        fill(&mut log, next, next + batch);
        next += batch;
        writeln!(out, "committed {next}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn sigkill_mid_append_keeps_committed_records() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut committed = 0u64;
    for round in 1..=4u64 {
        let mut child = Command::new(&exe)
            .args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
            .env(DIR_VAR, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let target = committed + 3000 * round;
        let parse = |line: std::io::Result<String>| -> Option<u64> {
            line.ok()?.strip_prefix("committed ")?.parse().ok()
        };
        for n in lines.by_ref().filter_map(parse) {
            committed = n;
            if n >= target {
                break;
            }
        }
        // Keep draining so the writer is appending, not blocked on a full pipe, when killed.
        let drain = std::thread::spawn(move || lines.filter_map(parse).max());
        std::thread::sleep(std::time::Duration::from_micros(300 * round));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
        committed = drain.join().unwrap().unwrap_or(committed).max(committed);

        let (log, report) = Log::open(file_opts(dir.path(), Storage::Mmap, SEGMENT)).unwrap();
        let all = read_all(&log);
        eprintln!("round {round}: committed {committed}: {report}");
        assert!(all.len() as u64 >= committed, "round {round}: {report}");
        for (i, r) in all.iter().enumerate() {
            check(r, i as u64);
        }
        assert!(log.stats().segments > round as usize, "segments rolled");
        committed = log.next_offset();
    }
    assert!(fogline_log::verify(dir.path(), false).unwrap().is_ok());
}
