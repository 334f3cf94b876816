//! `fogline function ...` against the real `fogline serve`: store a process function with
//! a profile, start it on a topic, see its results, its instance, stop and delete it.

mod support;

use std::ffi::OsStr;
use std::process::Command;
use std::time::Duration;

use fogline_client::{Client, ClientOptions, PublishRecord, SubscribeOptions};

/// Runs `fogline function ARGS --admin ADDR`; its stdout, or a panic with its stderr.
fn cli(admin: &str, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .arg("function")
        .args(args)
        .args(["--admin", admin])
        .output()
        .expect("fogline runs");
    assert!(
        out.status.success(),
        "fogline function {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn cli_json(admin: &str, args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.push("--json");
    serde_json::from_str(&cli(admin, &all)).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_is_stored_started_stopped_and_removed_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let node = support::serve([OsStr::new("--data-dir"), dir.path().as_os_str()]);
    let admin = node.http.clone().expect("an admin API");
    let a = admin.as_str();
    let script = r#"while read l; do echo "$l!"; done"#;
    let args = [
        "store",
        "bang",
        "--command",
        "/bin/sh",
        "--arg",
        "-c",
        "--arg",
        script,
    ];
    let stored = cli(a, &[&args[..], &["--attr", "stage=shout"]].concat());
    assert!(stored.contains("Function bang was stored."), "{stored}");
    let ls = cli(a, &["ls"]);
    assert!(
        ls.contains("bang") && ls.contains("process") && ls.contains("stage=shout"),
        "{ls}"
    );

    let client = Client::connect(&node.native, ClientOptions::default())
        .await
        .unwrap();
    let mut out = client
        .subscribe("t/out", SubscribeOptions::default())
        .await
        .unwrap();
    let started = cli(
        a,
        &["start", "bang", "--source", "t/in", "--output", "t/out"],
    );
    assert!(started.contains("was started as instance"), "{started}");
    client
        .publish_acked(&PublishRecord::new("t/in", b"hi".to_vec()))
        .await
        .unwrap();
    let m = tokio::time::timeout(Duration::from_secs(10), out.recv())
        .await
        .expect("a result within 10 s")
        .expect("open");
    assert_eq!(&m.payload[..], b"hi!");

    let instances = cli_json(a, &["instances"]);
    assert_eq!(instances[0]["state"], "running");
    assert_eq!(instances[0]["records_out"], 1);
    let table = cli(a, &["instances"]);
    assert!(table.contains("t/in -> t/out"), "{table}");
    assert!(cli(a, &["stop", "bang"]).contains("1 instance(s) stopped"));
    assert_eq!(cli_json(a, &["instances"])[0]["state"], "stopped");
    assert!(cli(a, &["rm", "bang"]).contains("Function bang is dropped."));
    assert_eq!(cli_json(a, &["ls"]), serde_json::json!([]));
    client.close().await.unwrap();
}
