//! The demo's SQL rule: the node counts the records of each robot in 1-second windows,
//! inside the node, on the live stream, and publishes each window's counts.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use fogline_client::{Client, SubscribeOptions, Subscription};
use fogline_rules::sink::request;

/// Where the rule's results go.
const OUT: &str = "demo/counts";

/// Makes the stream and the rule over the admin API, and subscribes to its results.
pub async fn start(http: &str, client: &Client) -> anyhow::Result<Subscription> {
    let sub = client.subscribe(OUT, SubscribeOptions::default()).await?;
    post(
        http,
        "/api/v1/streams",
        serde_json::json!({"sql": "CREATE STREAM telemetry () WITH (DATASOURCE=\"site/+/telemetry\", FORMAT=\"binary\")"}),
    )
    .await?;
    post(
        http,
        "/api/v1/rules",
        serde_json::json!({
            "id": "per_robot",
            "sql": SQL,
            "actions": [{"publish": {"topic": OUT}}],
        }),
    )
    .await?;
    Ok(sub)
}

/// The rule.
pub const SQL: &str = "SELECT split_value(meta(topic), '/', 1) AS robot, count(*) AS n \
     FROM telemetry GROUP BY meta(topic), TUMBLINGWINDOW(ss, 1)";

async fn post(http: &str, path: &str, body: serde_json::Value) -> anyhow::Result<()> {
    send(http, "POST", path, Bytes::from(body.to_string()))
        .await
        .map(drop)
}

/// The body of a GET on the admin API.
pub async fn get(http: &str, path: &str) -> anyhow::Result<String> {
    send(http, "GET", path, Bytes::new()).await
}

async fn send(http: &str, method: &str, path: &str, body: Bytes) -> anyhow::Result<String> {
    let url = format!("http://{http}{path}");
    let r = request(method, &url, body, Duration::from_secs(10)).await?;
    let text = String::from_utf8_lossy(&r.body).into_owned();
    if r.status >= 300 {
        anyhow::bail!("{method} {path}: HTTP {}: {text}", r.status);
    }
    Ok(text)
}

/// Adds up the windows' counts until they cover `total` records (or 10 s pass).
pub async fn totals(sub: &mut Subscription, total: u64) -> (BTreeMap<String, u64>, usize) {
    let mut per_robot = BTreeMap::new();
    let mut windows = 0;
    while per_robot.values().sum::<u64>() < total {
        let Ok(Some(m)) = tokio::time::timeout(Duration::from_secs(10), sub.recv()).await else {
            break;
        };
        windows += 1;
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&m.payload).unwrap_or_default();
        for r in rows {
            if let (Some(robot), Some(n)) = (r["robot"].as_str(), r["n"].as_u64()) {
                *per_robot.entry(robot.to_string()).or_insert(0) += n;
            }
        }
    }
    (per_robot, windows)
}
