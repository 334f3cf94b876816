//! `fogline bridge ls|status` against the real `fogline serve`: a Kafka bridge pointed at a
//! closed port is listed `down` with its last error; an unknown name is an error.

mod support;

use std::ffi::OsStr;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn cli(admin: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fogline"))
        .arg("bridge")
        .args(args)
        .args(["--admin", admin])
        .output()
        .expect("fogline runs")
}

fn stdout(admin: &str, args: &[&str]) -> String {
    let out = cli(admin, args);
    assert!(
        out.status.success(),
        "fogline bridge {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A node with one Kafka bridge, `core`, whose broker is a closed port.
fn node_with_a_down_bridge(dir: &std::path::Path) -> support::Served {
    let config = dir.join("fogline.toml");
    std::fs::write(
        &config,
        "[[bridge.kafka]]\nname = \"core\"\nbootstrap = [\"127.0.0.1:1\"]\nstream = \"default\"\n",
    )
    .unwrap();
    let data = dir.join("data");
    support::serve([
        OsStr::new("--config"),
        config.as_os_str(),
        OsStr::new("--data-dir"),
        data.as_os_str(),
    ])
}

#[test]
fn a_down_bridge_is_listed_with_its_error_and_an_unknown_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let node = node_with_a_down_bridge(dir.path());
    let admin = node.http.clone().expect("an admin API");
    let a = admin.as_str();

    // The first connection attempt fails at once (nothing listens on port 1).
    let deadline = Instant::now() + Duration::from_secs(20);
    let json = loop {
        let out = stdout(a, &["ls", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
        if v["bridges"][0]["state"] == "down" || Instant::now() > deadline {
            break v;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let b = &json["bridges"][0];
    assert_eq!(
        (b["name"].as_str(), b["state"].as_str()),
        (Some("core"), Some("down")),
        "{json}"
    );
    assert!(b["errors"].as_u64().unwrap() >= 1, "{json}");
    let error = b["last_error"].as_str().expect("a last error").to_string();
    assert!(!error.is_empty());

    let table = stdout(a, &["ls"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "{table}");
    assert!(
        lines[0].starts_with("name") && lines[0].ends_with("last error"),
        "{table}"
    );
    let words: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(&words[..3], ["core", "kafka_out", "down"], "{table}");
    // The error may have been updated since; its start names what failed.
    let head: String = error.chars().take(20).collect();
    assert!(lines[1].contains(head.trim()), "{table} lacks {error}");

    let status = stdout(a, &["status", "core"]);
    for field in [
        "name",
        "kind",
        "target",
        "state",
        "records",
        "lag_records",
        "last_error",
    ] {
        assert!(
            status
                .lines()
                .any(|l| l.split_whitespace().next() == Some(field)),
            "{field} missing in\n{status}"
        );
    }
    assert!(status.contains("kafka 127.0.0.1:1 -> "), "{status}");
    let one: serde_json::Value =
        serde_json::from_str(&stdout(a, &["status", "core", "--json"])).unwrap();
    assert_eq!(one["state"], "down", "{one}");

    let unknown = cli(a, &["status", "nope"]);
    assert!(!unknown.status.success());
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        err.contains("no bridge named \"nope\"") && err.contains("404"),
        "{err}"
    );
}
