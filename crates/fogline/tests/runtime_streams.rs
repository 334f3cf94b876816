//! Streams created and changed while the real `fogline serve` runs, over the CLI, the HTTP
//! admin API and the native protocol, keep their settings and their acknowledged records
//! across a SIGKILL and a restart; consumers are listed and deleted with the CLI.

mod support;

use std::ffi::OsStr;
use std::process::Command;
use std::time::Duration;

use fogline_client::{Client, ClientOptions, PublishRecord, StreamSpec, NODE_DEFAULT};
use support::Served;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn start(data: &std::path::Path) -> Served {
    support::serve([OsStr::new("--data-dir"), data.as_os_str()])
}

/// Runs `fogline ARGS --server ADDR`; its stdout, or a panic with its stderr.
fn cli(server: &str, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .args(args)
        .args(["--server", server])
        .output()
        .expect("fogline runs");
    assert!(
        out.status.success(),
        "fogline {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn cli_json(server: &str, args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.push("--json");
    serde_json::from_str(&cli(server, &all)).expect("JSON")
}

async fn publish_acked(addr: &str, topic: &str, n: u32) {
    let client = Client::connect(addr, ClientOptions::default())
        .await
        .expect("connect");
    for i in 0..n {
        client
            .publish_acked(&PublishRecord::new(topic, i.to_le_bytes().to_vec()))
            .await
            .expect("acked");
    }
    client.close().await.expect("close");
}

async fn http(addr: &str, method: &str, path: &str, body: Option<&str>) -> (u16, String) {
    let mut sock = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let body = body.unwrap_or("");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    sock.write_all(req.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    sock.read_to_end(&mut raw).await.expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_made_at_runtime_survive_kill_9_by_every_route() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut node = start(&data);

    // The CLI.
    let made = cli_json(
        &node.native,
        &[
            "stream",
            "add",
            "cli",
            "--subjects",
            "cli/#",
            "--storage",
            "fsync",
            "--retention-bytes",
            "8MiB",
            "--retention-age",
            "2h",
        ],
    );
    assert_eq!(made["storage"], "fsync");
    // The HTTP admin API.
    let http_addr = node.http.clone().expect("an admin API");
    let (status, body) = http(
        &http_addr,
        "POST",
        "/api/v1/streams",
        Some(r#"{"name":"rest","subjects":["rest/#"],"retention_age_seconds":0}"#),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    // The native protocol.
    let client = Client::connect(&node.native, ClientOptions::default())
        .await
        .unwrap();
    client
        .stream_create(StreamSpec {
            name: "native".into(),
            storage: None,
            subjects: vec!["native/+/x".into()],
            retention_bytes: 0,
            retention_age_ms: NODE_DEFAULT,
            segment_bytes: 1 << 20,
        })
        .await
        .unwrap();
    client.close().await.unwrap();
    for (topic, n) in [("cli/a", 10), ("rest/b", 20), ("native/c/x", 30)] {
        publish_acked(&node.native, topic, n).await;
    }
    // A change, over HTTP, before the crash.
    let (status, body) = http(
        &http_addr,
        "PATCH",
        "/api/v1/streams/rest",
        Some(r#"{"subjects":["rest/#","more/#"]}"#),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    node.kill();
    let node = start(&data);
    let info = |name: &str| cli_json(&node.native, &["stream", "info", name]);
    let cli_s = info("cli");
    assert_eq!(cli_s["storage"], "fsync");
    assert_eq!(cli_s["retention_bytes"], 8 * 1024 * 1024);
    assert_eq!(cli_s["retention_age_seconds"], 7200.0);
    assert_eq!(cli_s["records"], 10);
    let rest = info("rest");
    assert_eq!(rest["subjects"], serde_json::json!(["rest/#", "more/#"]));
    assert!(rest["retention_age_seconds"].is_null(), "no age limit");
    assert_eq!(rest["records"], 20);
    let native = info("native");
    assert_eq!(native["subjects"], serde_json::json!(["native/+/x"]));
    assert!(native["retention_bytes"].is_null(), "no size limit");
    assert_eq!(native["segment_bytes"], 1 << 20);
    assert_eq!(native["records"], 30);
    // The default stream captured all 60.
    assert_eq!(info("default")["records"], 60);
    let listed = cli(&node.native, &["stream", "ls"]);
    for name in ["default", "cli", "rest", "native"] {
        assert!(listed.contains(name), "{listed}");
    }

    // Purge and delete persist too.
    cli(&node.native, &["stream", "purge", "cli"]);
    cli(&node.native, &["stream", "rm", "rest"]);
    let mut node = node;
    node.kill();
    let node = start(&data);
    assert_eq!(
        cli_json(&node.native, &["stream", "info", "cli"])["records"],
        0
    );
    let out = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .args(["stream", "info", "rest", "--server", &node.native])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown stream") && err.contains("UnknownStream"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_are_managed_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(&dir.path().join("data"));
    publish_acked(&node.native, "jobs/1", 5).await;
    let client = Client::connect(&node.native, ClientOptions::default())
        .await
        .unwrap();
    let mut c = client
        .consumer(
            "default",
            fogline_client::ConsumerOptions {
                name: "worker".into(),
                start: fogline_client::StartPosition::Earliest,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let got = c.fetch(2, Duration::from_secs(5)).await.unwrap();
    c.ack(&[got[0].offset]).unwrap();
    client.flush().await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let listed = loop {
        let v = cli_json(&node.native, &["consumer", "ls"]);
        if v[0]["ack_floor"] == 1 || std::time::Instant::now() > deadline {
            break v;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(listed[0]["name"], "worker");
    assert_eq!(listed[0]["open"], true);
    assert_eq!(listed[0]["ack_floor"], 1);
    assert_eq!(listed[0]["lag"], 4);
    let out = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .args([
            "consumer",
            "rm",
            "default",
            "worker",
            "--server",
            &node.native,
        ])
        .output()
        .unwrap();
    assert!(!out.status.success(), "an open consumer is not deleted");
    c.close().unwrap();
    client.close().await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while cli_json(&node.native, &["consumer", "info", "default", "worker"])["open"] == true {
        assert!(std::time::Instant::now() < deadline, "still open");
        std::thread::sleep(Duration::from_millis(50));
    }
    cli(&node.native, &["consumer", "rm", "default", "worker"]);
    assert_eq!(
        cli_json(&node.native, &["consumer", "ls"]),
        serde_json::json!([])
    );
}
