//! End to end with real MQTT clients (Debian's mosquitto-clients): mosquitto_pub sends
//! JSON readings, a tumbling-window average rule made over the admin API publishes one
//! result per sensor and window (a topic template sends each row alone), and
//! mosquitto_sub receives the right numbers.

mod support;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

async fn call(
    http: &str,
    method: &str,
    path: &str,
    body: Option<serde_json::Value>,
) -> serde_json::Value {
    support::admin(http, method, path, body).await
}

fn mosquitto(cmd: &str, port: &str, args: &[&str]) -> Output {
    Command::new(cmd)
        .args(["-h", "127.0.0.1", "-p", port, "-V", "mqttv311"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!("{cmd} must be installed (Debian package mosquitto-clients): {e}")
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mosquitto_readings_become_window_averages() {
    let dir = tempfile::tempdir().unwrap();
    let server = support::serve(["--data-dir", dir.path().to_str().unwrap()]);
    let http = server.http.clone().unwrap();
    let port = server.mqtt.rsplit(':').next().unwrap().to_string();
    call(
        &http,
        "POST",
        "/api/v1/streams",
        Some(serde_json::json!({"sql": "CREATE STREAM demo (id STRING, temperature FLOAT, ts BIGINT) WITH (DATASOURCE=\"sensors/+/temp\", FORMAT=\"json\", TIMESTAMP=\"ts\")"})),
    )
    .await;
    call(
        &http,
        "POST",
        "/api/v1/rules",
        Some(serde_json::json!({
            "id": "avg",
            "sql": "SELECT id, avg(temperature) AS avg, count(*) AS n FROM demo GROUP BY id, TUMBLINGWINDOW(ss, 10)",
            "actions": [{"mqtt": {"server": "tcp://127.0.0.1:1883", "topic": "avg/{{.id}}"}}],
            "options": {"isEventTime": true, "lateTolerance": 0}
        })),
    )
    .await;
    let before = call(&http, "GET", "/api/v1/subscriptions", None)
        .await
        .as_array()
        .unwrap()
        .len();
    let sub_port = port.clone();
    let sub = tokio::task::spawn_blocking(move || {
        mosquitto(
            "mosquitto_sub",
            &sub_port,
            &["-t", "avg/#", "-v", "-C", "2", "-W", "30"],
        )
    });
    // Wait until mosquitto_sub's subscription exists.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while call(&http, "GET", "/api/v1/subscriptions", None)
        .await
        .as_array()
        .unwrap()
        .len()
        <= before
    {
        assert!(
            std::time::Instant::now() < deadline,
            "mosquitto_sub did not subscribe"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let readings = [
        ("a", 20.0, 1_000),
        ("b", 30.0, 2_000),
        ("a", 22.0, 3_000),
        ("a", 24.5, 9_000),
        ("b", 31.0, 9_500),
        // A later window's reading closes the first window.
        ("a", 99.0, 10_500),
    ];
    for (id, t, ts) in readings {
        let body = serde_json::json!({"id": id, "temperature": t, "ts": ts}).to_string();
        let topic = format!("sensors/{id}/temp");
        let p = port.clone();
        let out = tokio::task::spawn_blocking(move || {
            mosquitto("mosquitto_pub", &p, &["-t", &topic, "-m", &body, "-q", "1"])
        })
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "mosquitto_pub: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = sub.await.unwrap();
    assert!(
        out.status.success(),
        "mosquitto_sub: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    let parsed: Vec<(String, serde_json::Value)> = lines
        .iter()
        .map(|l| {
            let (topic, body) = l.split_once(' ').unwrap();
            (topic.to_string(), serde_json::from_str(body).unwrap())
        })
        .collect();
    assert_eq!(parsed[0].0, "avg/a");
    assert_eq!(
        parsed[0].1,
        serde_json::json!({"id": "a", "avg": 22.166666666666668, "n": 3})
    );
    assert_eq!(parsed[1].0, "avg/b");
    assert_eq!(
        parsed[1].1,
        serde_json::json!({"id": "b", "avg": 30.5, "n": 2})
    );
    let status = call(&http, "GET", "/api/v1/rules/avg/status", None).await;
    assert_eq!(status["source_demo_0_records_in_total"], 6);
    assert_eq!(status["status"], "running");
}
