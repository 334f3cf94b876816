//! Crash test of a qos 1 windowed rule: the server is killed with SIGKILL at random
//! moments while a rule sums records into 1-second event-time windows; after each
//! restart the rule resumes from its checkpoint. At the end every window's result is
//! there with the right count and sum (a window may be produced more than once: at least
//! once; duplicates are counted and must agree).
//!
//! 8 kill/restart rounds; `FOGLINE_RULES_CRASH_ROUNDS` runs more.

mod support;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::time::Duration;

use fogline_client::{Client, ClientOptions, ConsumerOptions, PublishRecord};
use fogline_wire::StartPosition;
use support::Served;

/// Records per window (event time 100 ms apart, windows of 1 s).
const PER_WINDOW: u64 = 10;
/// Records published per round.
const PER_ROUND: u64 = 60;

fn start(dir: &std::path::Path) -> Served {
    let data = dir.join("data");
    support::serve([OsStr::new("--data-dir"), data.as_os_str()])
}

async fn post(http: &str, path: &str, body: serde_json::Value) {
    support::admin(http, "POST", path, Some(body)).await;
}

async fn publish(native: &str, from: u64, to: u64) {
    let client = Client::connect(native, ClientOptions::default())
        .await
        .unwrap();
    for i in from..to {
        let body = serde_json::json!({"v": i, "ts": i * 100});
        client
            .publish_acked(&PublishRecord::new("in", body.to_string()))
            .await
            .unwrap();
    }
    client.close().await.unwrap();
}

/// Every result stored on `out` so far: window start -> (count, sum) per result.
async fn results(native: &str) -> Vec<(i64, u64, u64)> {
    let client = Client::connect(native, ClientOptions::default())
        .await
        .unwrap();
    let opts = ConsumerOptions {
        start: StartPosition::Earliest,
        ..ConsumerOptions::default()
    };
    let mut c = client.consumer("results", opts).await.unwrap();
    let mut out = Vec::new();
    loop {
        let got = c.fetch(1000, Duration::from_millis(300)).await.unwrap();
        if got.is_empty() {
            break;
        }
        for m in got {
            let v: serde_json::Value = serde_json::from_slice(&m.payload).unwrap();
            out.push((
                v["ws"].as_i64().unwrap(),
                v["n"].as_u64().unwrap(),
                v["s"].as_u64().unwrap(),
            ));
        }
    }
    client.close().await.unwrap();
    out
}

fn rounds() -> u64 {
    std::env::var("FOGLINE_RULES_CRASH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(8)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_window_result_is_produced_across_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = start(dir.path());
    let http = server.http.clone().unwrap();
    post(
        &http,
        "/api/v1/streams",
        serde_json::json!({"sql": "CREATE STREAM demo (v BIGINT, ts BIGINT) WITH (DATASOURCE=\"in\", FORMAT=\"json\", TIMESTAMP=\"ts\")"}),
    )
    .await;
    post(
        &http,
        "/api/v1/streams",
        serde_json::json!({"name": "results", "subjects": ["out"]}),
    )
    .await;
    post(
        &http,
        "/api/v1/rules",
        serde_json::json!({
            "id": "sums",
            "sql": "SELECT window_start() AS ws, count(*) AS n, sum(v) AS s FROM demo GROUP BY TUMBLINGWINDOW(ss, 1)",
            "actions": [{"publish": {"topic": "out", "sendSingle": true}}],
            "options": {"qos": 1, "isEventTime": true, "lateTolerance": 0, "checkpointInterval": 150}
        }),
    )
    .await;
    let rounds = rounds();
    let mut rng = fastrand::Rng::with_seed(7);
    for r in 0..rounds {
        publish(&server.native, r * PER_ROUND, (r + 1) * PER_ROUND).await;
        // Kill at a random moment: before, during or after the rule's work and checkpoints.
        tokio::time::sleep(Duration::from_millis(rng.u64(0..400))).await;
        server.kill();
        server = start(dir.path());
    }
    // One record of a later window closes the last one.
    let last = rounds * PER_ROUND;
    publish(&server.native, last, last + 1).await;
    let windows = last / PER_WINDOW;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let got = loop {
        let got = results(&server.native).await;
        let seen: std::collections::BTreeSet<i64> = got.iter().map(|g| g.0).collect();
        if seen.len() as u64 >= windows || std::time::Instant::now() > deadline {
            break got;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let mut by_window: BTreeMap<i64, Vec<(u64, u64)>> = BTreeMap::new();
    for (ws, n, s) in &got {
        by_window.entry(*ws).or_default().push((*n, *s));
    }
    let mut duplicates = 0;
    for w in 0..windows {
        let start = (w * 1000) as i64;
        let first = w * PER_WINDOW;
        let want = (PER_WINDOW, (first..first + PER_WINDOW).sum::<u64>());
        let seen = by_window
            .get(&start)
            .unwrap_or_else(|| panic!("window at {start} ms missing; results: {by_window:?}"));
        assert!(
            seen.iter().all(|x| *x == want),
            "window at {start} ms: {seen:?}, want {want:?}"
        );
        duplicates += seen.len() - 1;
    }
    assert_eq!(
        by_window.len() as u64,
        windows,
        "no window beyond the records: {by_window:?}"
    );
    eprintln!(
        "{rounds} kill -9 rounds: {windows} windows, all produced; {duplicates} produced twice or more"
    );
}
