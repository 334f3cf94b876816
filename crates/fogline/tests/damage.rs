//! Damaged records on disk, as a user meets them (issue 31, finding 3): one damaged record
//! costs only itself, start-up says exactly what was dropped at WARN, a reader that reaches
//! it is told and goes on, and `fogline log verify` fails until `--repair` marks it lost.

mod support;

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use fogline_client::{Client, ClientOptions, PublishRecord};

const N: u64 = 2000;

fn record(i: u64) -> Vec<u8> {
    format!("{i:06}-").repeat(16).into_bytes()
}

/// The stream's segment files, oldest first.
fn segments(stream: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(stream)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    v.sort();
    v
}

/// Every record here takes the same room: 36 bytes of fields, the topic and the payload.
const RECORD: usize = 36 + 6 + 112;

/// Flips 16 bytes inside the record in the middle of a segment file.
fn flip_middle(path: &Path) {
    let mut b = std::fs::read(path).unwrap();
    let end = b.iter().rposition(|&x| x != 0).unwrap();
    let at = end / 2 / RECORD * RECORD + 40;
    for x in &mut b[at..at + 16] {
        *x ^= 0x5a;
    }
    std::fs::write(path, &b).unwrap();
}

fn fogline(args: &[&OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_fogline"))
        .args(args)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_record_costs_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = dir.path().join("fogline.toml");
    std::fs::write(&config, "[broker]\nsegment_bytes = \"64KiB\"\n").unwrap();
    let args = [
        OsStr::new("--data-dir"),
        data.as_os_str(),
        OsStr::new("--config"),
        config.as_os_str(),
    ];
    let mut node = support::serve(args);
    let client = Client::connect(&node.native, ClientOptions::default())
        .await
        .unwrap();
    for i in 0..N {
        assert_eq!(record(i).len() + 36 + 6, RECORD);
        let rec = PublishRecord::new("site/a", record(i));
        client.publish_acked(&rec).await.unwrap();
    }
    client.close().await.unwrap();
    node.kill();

    // 16 flipped bytes in the middle of a sealed segment (trusted on its index at start-up,
    // so found by reads) and in the middle of the active one (found at start-up).
    let stream = data.join("default");
    let files = segments(&stream);
    assert!(files.len() >= 3, "{files:?}");
    flip_middle(&files[0]);
    flip_middle(files.last().unwrap());

    let node = support::serve(args);
    let warnings: Vec<String> = node.log.lock().unwrap().clone();
    let lost: Vec<&String> = warnings
        .iter()
        .filter(|l| l.contains("WARN") && l.contains("records lost to damage"))
        .collect();
    assert_eq!(
        lost.len(),
        1,
        "one warning for the active segment: {warnings:#?}"
    );
    assert!(lost[0].contains("end_offset"), "{}", lost[0]);
    assert!(
        warnings.iter().all(|l| !l.contains('\x1b')),
        "a log written to a pipe has no colour codes: {warnings:#?}"
    );

    // A reader from the start gets every intact record and is told about each damaged one.
    let out = fogline(&[
        OsStr::new("sub"),
        OsStr::new("-s"),
        OsStr::new(&node.native),
        OsStr::new("--stream"),
        OsStr::new("default"),
        OsStr::new("--idle"),
        OsStr::new("2s"),
        OsStr::new("--quiet"),
        OsStr::new("--json"),
        OsStr::new("#"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["received"], N - 2, "{summary} {stderr}");
    let told: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(told.len(), 2, "{stderr}");
    assert!(told.iter().any(|l| l.contains("is damaged")), "{stderr}");
    assert!(told.iter().any(|l| l.contains("was lost")), "{stderr}");
    drop(node);

    // verify fails on the sealed segment's damage; --repair marks it lost; then it passes.
    let verify = |repair: bool| {
        let mut a = vec![OsStr::new("log"), OsStr::new("verify"), stream.as_os_str()];
        if repair {
            a.push(OsStr::new("--repair"));
        }
        fogline(&a)
    };
    let before = verify(false);
    let text = String::from_utf8_lossy(&before.stdout);
    assert!(!before.status.success(), "{text}");
    assert!(text.contains("DAMAGED"), "{text}");
    let repaired = verify(true);
    assert!(
        repaired.status.success(),
        "{}",
        String::from_utf8_lossy(&repaired.stdout)
    );
    let after = verify(false);
    let text = String::from_utf8_lossy(&after.stdout);
    assert!(after.status.success(), "{text}");
    assert!(text.contains(&format!("{} records", N - 2)), "{text}");
}
