//! The metrics against a real Prometheus server (Debian's `prometheus` package): it scrapes
//! `fogline serve`'s `/metrics` once a second, and a query of its HTTP API shows
//! `fogline_records_in_total` rising as records are published; `promtool check metrics`
//! passes on the output.
//!
//! Needs `prometheus` and `promtool` on the PATH. Where they are missing the test says so
//! and does nothing, unless `FOGLINE_TEST_PROMETHEUS=1` (set by `scripts/test.sh`, which
//! installs them) makes that a failure.

mod support;

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fogline_client::{Client, ClientOptions, PublishRecord};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Stops the Prometheus server we started, whatever happens.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn installed(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The body of a GET, or `None` while nothing answers (a server still starting).
async fn get(addr: &str, path: &str) -> Option<String> {
    let mut sock = tokio::net::TcpStream::connect(addr).await.ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    sock.write_all(req.as_bytes()).await.ok()?;
    let mut raw = Vec::new();
    sock.read_to_end(&mut raw).await.ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    text.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

/// The sum of `fogline_records_in_total` as Prometheus has it, if it has it yet.
async fn scraped_total(prometheus: &str) -> Option<f64> {
    let body = get(
        prometheus,
        "/api/v1/query?query=sum(fogline_records_in_total%7Bprotocol%3D%22native%22%7D)",
    )
    .await?;
    let v: serde_json::Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"][0]["value"][1]
        .as_str()
        .and_then(|s| s.parse().ok())
}

async fn publish(addr: &str, n: u32) {
    let client = Client::connect(addr, ClientOptions::default())
        .await
        .expect("connect");
    for i in 0..n {
        client
            .publish_acked(&PublishRecord::new("metrics/t", i.to_le_bytes().to_vec()))
            .await
            .expect("acked");
    }
    client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_records_in_rising() {
    if !installed("prometheus") || !installed("promtool") {
        let why = "prometheus and promtool are not installed (Debian: apt-get install prometheus)";
        assert!(
            std::env::var("FOGLINE_TEST_PROMETHEUS").is_err(),
            "FOGLINE_TEST_PROMETHEUS is set but {why}"
        );
        eprintln!("SKIPPED: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let node = support::serve([std::ffi::OsStr::new("--data-dir"), data.as_os_str()]);
    let http = node.http.clone().expect("the admin API");

    // promtool accepts what /metrics serves.
    publish(&node.native, 10).await;
    let metrics = get(&http, "/metrics").await.expect("/metrics answers");
    assert!(metrics.contains("fogline_records_in_total"), "{metrics}");
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs");
    check
        .stdin
        .take()
        .unwrap()
        .write_all(metrics.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // A real Prometheus scrapes it every second.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let prometheus = format!("127.0.0.1:{port}");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: fogline\n    static_configs:\n      - targets: ['{http}']\n"
        ),
    )
    .unwrap();
    let _server = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={prometheus}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus starts"),
    );
    let wait_for = |want: f64| {
        let prometheus = prometheus.clone();
        async move {
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                if let Some(v) = scraped_total(&prometheus).await {
                    if v >= want {
                        return v;
                    }
                }
                assert!(
                    Instant::now() < deadline,
                    "Prometheus never saw fogline_records_in_total reach {want}"
                );
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    };
    let first = wait_for(10.0).await;
    publish(&node.native, 500).await;
    let second = wait_for(first + 500.0).await;
    assert!(second > first, "{first} -> {second}");
}
