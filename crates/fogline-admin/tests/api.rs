//! The admin API against a real broker: what each route answers, stream and consumer
//! management with its errors (HTTP status and the protocol's code), connections and
//! subscriptions, interests and announced producers, the metrics and the live feed.

mod common;

use std::time::Duration;

use common::{http, running, Admin};
use fogline_admin::{ComponentState, ComponentStatus};
use fogline_broker::link::PublishOptions;
use fogline_broker::{ConsumerOptions, Start, StorageMode, SubscribeOptions};
use fogline_profile::{DataProfile, Interest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn health_follows_the_components() {
    let ok = Admin::start(
        StorageMode::Memory,
        vec![running("native"), running("admin")],
    )
    .await;
    let r = ok.get("/healthz").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"], "ok");
    ok.stop().await;
    let failed = ComponentStatus {
        state: ComponentState::Failed,
        detail: Some("cannot listen".into()),
        ..running("mqtt")
    };
    let bad = Admin::start(StorageMode::Memory, vec![running("native"), failed]).await;
    let r = bad.get("/healthz").await;
    assert_eq!(r.status, 503);
    assert_eq!(r.json()["components"][1]["detail"], "cannot listen");
    bad.stop().await;
}

#[tokio::test]
async fn the_node_describes_itself() {
    let a = Admin::start(StorageMode::Mmap, vec![running("broker")]).await;
    let n = a.get("/api/v1/node").await.json();
    assert_eq!(n["id"], "test-node");
    assert_eq!(n["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(n["storage"], "mmap");
    assert!(n["memory"]["rss_bytes"].as_u64().unwrap() > 0);
    assert!(
        n["data_dir_bytes"].as_u64().unwrap() > 0,
        "a preallocated segment"
    );
    assert!(n["data_dir_free_bytes"].as_u64().unwrap() > 0);
    assert_eq!(n["counts"]["streams"], 1);
    assert!(n["started_at"].as_str().unwrap().ends_with('Z'));
    a.stop().await;
}

#[tokio::test]
async fn streams_are_managed_over_rest() {
    let a = Admin::start(StorageMode::Mmap, vec![]).await;
    let body = r#"{"name":"lab","subjects":["lab/#"],"storage":"fsync","retention_bytes":1048576,"retention_age_seconds":0}"#;
    let r = a.send("POST", "/api/v1/streams", Some(body)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let s = r.json();
    assert_eq!(s["storage"], "fsync");
    assert_eq!(s["retention_bytes"], 1_048_576);
    assert!(s["retention_age_seconds"].is_null(), "0: no limit");
    assert_eq!(s["retention_bytes_default"], false);
    // It captures at once.
    let link = a.broker.link("t");
    link.publish_acked("lab/1", b"x").await.unwrap();
    let s = a.get("/api/v1/streams/lab").await.json();
    assert_eq!(
        (s["records"].as_u64(), s["last_offset"].as_u64()),
        (Some(1), Some(0))
    );
    assert!(s["last_time"].is_string());
    // Errors carry the protocol's codes.
    let again = a.send("POST", "/api/v1/streams", Some(body)).await;
    assert_eq!(again.status, 409);
    assert_eq!(again.json()["error"]["name"], "Duplicate");
    let bad = a
        .send(
            "POST",
            "/api/v1/streams",
            Some(r#"{"name":"x","subjects":["a/#/b"]}"#),
        )
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["error"]["code"], 20);
    let unknown = a
        .send(
            "POST",
            "/api/v1/streams",
            Some(r#"{"name":"x","subjects":["a"],"colour":1}"#),
        )
        .await;
    assert_eq!(unknown.status, 400);
    assert!(unknown.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("colour"));
    let garbage = a.send("POST", "/api/v1/streams", Some("{")).await;
    assert_eq!(garbage.status, 400);
    // Changes.
    let r = a
        .send(
            "PATCH",
            "/api/v1/streams/lab",
            Some(r#"{"subjects":["lab/+/x"],"retention_bytes":null}"#),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let s = r.json();
    assert_eq!(s["subjects"], serde_json::json!(["lab/+/x"]));
    assert_eq!(s["retention_bytes_default"], true);
    let r = a
        .send(
            "PATCH",
            "/api/v1/streams/lab",
            Some(r#"{"storage":"memory"}"#),
        )
        .await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("cannot change"));
    let r = a
        .send("PATCH", "/api/v1/streams/lab", Some(r#"{"shards":3}"#))
        .await;
    assert_eq!(r.status, 400);
    // Purge and delete.
    let r = a.send("POST", "/api/v1/streams/lab/purge", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["records"], 0);
    assert_eq!(r.json()["first_offset"], 1);
    let r = a.send("DELETE", "/api/v1/streams/lab", None).await;
    assert_eq!(r.status, 204);
    let r = a.get("/api/v1/streams/lab").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["name"], "UnknownStream");
    assert_eq!(r.json()["error"]["code"], 8);
    let names: Vec<String> = a
        .get("/api/v1/streams")
        .await
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["default"]);
    drop(link);
    a.stop().await;
}

#[tokio::test]
async fn consumers_are_listed_and_deleted_over_rest() {
    let a = Admin::start(StorageMode::Mmap, vec![]).await;
    let link = a.broker.link("worker");
    for i in 0..5u8 {
        link.publish_acked("jobs", [i]).await.unwrap();
    }
    let mut c = link
        .consumer(
            "default",
            ConsumerOptions {
                name: Some("w".into()),
                filter: None,
                start: Start::Earliest,
                ack_timeout: Some(Duration::from_secs(30)),
                max_inflight: 10,
            },
        )
        .unwrap();
    let got = c.fetch(2, Duration::ZERO).await.unwrap();
    c.ack(&[got[0].record.offset]).unwrap();
    let list = a.get("/api/v1/consumers").await.json();
    assert_eq!(list[0]["name"], "w");
    assert_eq!(list[0]["open"], true);
    assert_eq!(
        (list[0]["lag"].as_u64(), list[0]["pending_acks"].as_u64()),
        (Some(4), Some(1))
    );
    let one = a.get("/api/v1/streams/default/consumers/w").await;
    assert_eq!(one.status, 200);
    assert_eq!(one.json()["cursor"], 2);
    assert_eq!(
        a.get("/api/v1/consumers?stream=default")
            .await
            .json()
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(a.get("/api/v1/consumers?stream=nope").await.status, 404);
    assert_eq!(a.get("/api/v1/consumers?colour=red").await.status, 400);
    let busy = a
        .send("DELETE", "/api/v1/streams/default/consumers/w", None)
        .await;
    assert_eq!(busy.status, 409);
    drop(c);
    let done = a
        .send("DELETE", "/api/v1/streams/default/consumers/w", None)
        .await;
    assert_eq!(done.status, 204);
    let gone = a.get("/api/v1/streams/default/consumers/w").await;
    assert_eq!(gone.status, 404);
    assert_eq!(gone.json()["error"]["name"], "UnknownConsumer");
    a.stop().await;
}

#[tokio::test]
async fn connections_and_subscriptions_are_listed() {
    let a = Admin::start(StorageMode::Memory, vec![]).await;
    let sensor = a.broker.link("sensor");
    let reader = a.broker.link("reader");
    let mut sub = reader
        .subscribe("site/#", SubscribeOptions::default())
        .unwrap();
    for _ in 0..3 {
        sensor.publish("site/a", b"12345").await.unwrap();
    }
    let conns = a.get("/api/v1/connections").await.json();
    let by_name = |n: &str| {
        conns
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["client_id"] == n)
            .cloned()
            .unwrap()
    };
    let s = by_name("sensor");
    assert_eq!(
        (s["protocol"].as_str(), s["records_in"].as_u64()),
        (Some("link"), Some(3))
    );
    let r = by_name("reader");
    assert_eq!(r["subscriptions"], 1);
    assert!(
        r["pending_bytes"].as_u64().unwrap() > 0,
        "three records wait for it"
    );
    let subs = a.get("/api/v1/subscriptions").await.json();
    assert_eq!(subs[0]["filter"], "site/#");
    assert_eq!(subs[0]["connection"], r["id"]);
    assert_eq!(subs[0]["queued_records"], 3);
    sub.recv().await.unwrap();
    a.stop().await;
}

#[tokio::test]
async fn metrics_speak_both_text_formats() {
    let a = Admin::start(StorageMode::Memory, vec![running("native")]).await;
    let link = a.broker.link("m");
    link.publish_with("t", &[], b"x", PublishOptions::default())
        .await
        .unwrap();
    let classic = a.get("/metrics").await;
    assert_eq!(classic.status, 200);
    assert!(classic
        .header("content-type")
        .unwrap()
        .starts_with("text/plain; version=0.0.4"));
    assert!(classic
        .body
        .contains("# TYPE fogline_records_in_total counter"));
    assert!(classic
        .body
        .contains("fogline_records_in_total{protocol=\"link\"} 1"));
    assert!(classic.body.contains("fogline_build_info{version="));
    assert!(!classic.body.contains("# EOF"));
    let om = http(
        &a.addr,
        "GET",
        "/metrics",
        None,
        &[("Accept", "application/openmetrics-text;version=1.0.0")],
    )
    .await;
    assert!(om
        .header("content-type")
        .unwrap()
        .starts_with("application/openmetrics-text"));
    assert!(om.body.contains("# TYPE fogline_records_in counter"));
    assert!(om.body.ends_with("# EOF\n"));
    // Only bounded labels: never a client id or a topic.
    let mut keys = std::collections::BTreeSet::new();
    for line in om.body.lines().filter(|l| !l.starts_with('#')) {
        if let Some((_, labels)) = line.split_once('{') {
            for pair in labels.split('}').next().unwrap().split(',') {
                if let Some((k, _)) = pair.split_once('=') {
                    keys.insert(k.to_string());
                }
            }
        }
    }
    let allowed = [
        "component",
        "consumer",
        "le",
        "operation",
        "protocol",
        "reason",
        "state",
        "stream",
        "version",
    ];
    assert!(
        keys.iter().all(|k| allowed.contains(&k.as_str())),
        "{keys:?}"
    );
    a.stop().await;
}

/// The value of the sample `name` (with its labels, as the classic text writes them).
fn sample(metrics: &str, name: &str) -> f64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {name} in\n{metrics}"))
        .parse()
        .unwrap()
}

#[tokio::test]
async fn interests_and_producers_are_counted() {
    let a = Admin::start(StorageMode::Memory, vec![]).await;
    let producer = a.broker.link("drone");
    let lidar = DataProfile::parse("sensor=lidar").unwrap();
    let waiting = a
        .broker
        .announce("site/a", lidar.clone(), producer.origin())
        .unwrap();
    let ignored = a
        .broker
        .announce("field/b", DataProfile::parse("sensor=sonar").unwrap(), 0)
        .unwrap();
    let before = a.get("/metrics").await.body;
    assert_eq!(sample(&before, "fogline_interests"), 0.0);
    assert_eq!(sample(&before, "fogline_producers{state=\"waiting\"}"), 2.0);
    assert_eq!(sample(&before, "fogline_producers{state=\"sending\"}"), 0.0);
    assert_eq!(sample(&before, "fogline_announcements_total"), 2.0);

    let reader = a.broker.link("reader");
    let opts = SubscribeOptions {
        interest: Some(Interest::parse("sensor=li*").unwrap()),
        ..SubscribeOptions::default()
    };
    let mut sub = reader.subscribe("site/#", opts).unwrap();
    let _plain = reader
        .subscribe("other/#", SubscribeOptions::default())
        .unwrap();
    assert!(waiting.interested(), "the interest matches its profile");
    assert!(!ignored.interested());
    let headers: [(&str, &[u8]); 2] = [("sensor", b"lidar"), ("raw", &[0xff, 0xfe])];
    producer
        .publish_with("site/a", &headers, b"scan", PublishOptions::default())
        .await
        .unwrap();
    sub.recv().await.unwrap();

    let m = a.get("/metrics").await.body;
    assert_eq!(sample(&m, "fogline_interests"), 1.0);
    assert_eq!(sample(&m, "fogline_producers{state=\"waiting\"}"), 1.0);
    assert_eq!(sample(&m, "fogline_producers{state=\"sending\"}"), 1.0);
    assert_eq!(sample(&m, "fogline_profile_routed_records_total"), 1.0);
    assert_eq!(sample(&m, "fogline_profile_skipped_headers_total"), 1.0);
    assert!(m.contains("# TYPE fogline_announcements_total counter"));
    assert!(m.contains("# TYPE fogline_producers gauge"));

    let n = a.get("/api/v1/node").await.json();
    assert_eq!(n["counts"]["subscriptions"], 2);
    assert_eq!(n["counts"]["interests"], 1);
    assert_eq!(n["counts"]["producers_waiting"], 1);
    assert_eq!(n["counts"]["producers_sending"], 1);

    // The live feed carries the counts and the rows of the dashboard's panel.
    let snap = next_snapshot(&a).await;
    assert_eq!(
        (
            &snap["interests"],
            &snap["producers_waiting"],
            &snap["producers_sending"]
        ),
        (&1.into(), &1.into(), &1.into())
    );
    let interests = snap["rendezvous"]["interests"].as_array().unwrap();
    assert_eq!(interests.len(), 1, "the plain subscription is not listed");
    assert_eq!(interests[0]["filter"], "site/#");
    assert_eq!(interests[0]["interest"], "sensor=li*");
    let producers = snap["rendezvous"]["producers"].as_array().unwrap();
    let row = |topic: &str| producers.iter().find(|p| p["topic"] == topic).unwrap();
    assert_eq!(row("site/a")["interested"], true);
    assert_eq!(row("site/a")["profile"], "sensor=lidar");
    assert_eq!(row("field/b")["interested"], false);
    let conns = a.get("/api/v1/connections").await.json();
    let id_of = |name: &str| {
        conns
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["client_id"] == name)
            .unwrap()["id"]
            .clone()
    };
    assert_eq!(row("site/a")["connection"], id_of("drone"));
    assert_eq!(interests[0]["connection"], id_of("reader"));

    // When the interest goes, the producer waits again.
    drop(sub);
    let m = a.get("/metrics").await.body;
    assert_eq!(sample(&m, "fogline_interests"), 0.0);
    assert_eq!(sample(&m, "fogline_producers{state=\"waiting\"}"), 2.0);
    drop((waiting, ignored));
    let n = a.get("/api/v1/node").await.json();
    assert_eq!(n["counts"]["producers_waiting"], 0);
    a.stop().await;
}

/// The first `snapshot` event of a new reader of the live feed.
async fn next_snapshot(a: &Admin) -> serde_json::Value {
    let mut sock = tokio::net::TcpStream::connect(&a.addr).await.unwrap();
    sock.write_all(b"GET /api/v1/events HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(data) = seen
            .split_once("event: snapshot\n")
            .and_then(|(_, rest)| rest.split_once("\n\n"))
            .and_then(|(event, _)| event.strip_prefix("data: "))
        {
            return serde_json::from_str(data).unwrap();
        }
        let n = tokio::time::timeout(common::WAIT, sock.read(&mut buf))
            .await
            .expect("events keep coming")
            .unwrap();
        assert!(n > 0, "the feed ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
}

#[tokio::test]
async fn the_live_feed_sends_snapshots() {
    let a = Admin::start(StorageMode::Memory, vec![running("native")]).await;
    let mut sock = tokio::net::TcpStream::connect(&a.addr).await.unwrap();
    sock.write_all(b"GET /api/v1/events HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while seen.matches("event: snapshot").count() < 2 {
        let n = tokio::time::timeout(common::WAIT, sock.read(&mut buf))
            .await
            .expect("events keep coming")
            .unwrap();
        assert!(n > 0, "the feed ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(seen.contains("text/event-stream"));
    let data = seen.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
    let snap: serde_json::Value = serde_json::from_str(data).unwrap();
    assert!(snap["totals"]["records_in"].is_u64());
    assert_eq!(snap["streams"][0]["name"], "default");
    assert_eq!(snap["components"][0]["name"], "native");
    a.stop().await;
}

#[tokio::test]
async fn silent_and_idle_connections_are_closed() {
    let a = Admin::start(StorageMode::Memory, vec![]).await;
    let mut buf = [0u8; 256];
    // Says nothing.
    let mut silent = tokio::net::TcpStream::connect(&a.addr).await.unwrap();
    // Starts a request and stops (a slow-loris client).
    let mut partial = tokio::net::TcpStream::connect(&a.addr).await.unwrap();
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHo")
        .await
        .unwrap();
    // Asks once on a kept-alive connection, then goes quiet.
    let mut idle = tokio::net::TcpStream::connect(&a.addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    for (name, sock) in [
        ("silent", &mut silent),
        ("partial", &mut partial),
        ("idle", &mut idle),
    ] {
        let mut seen = Vec::new();
        loop {
            let n = tokio::time::timeout(common::WAIT, sock.read(&mut buf))
                .await
                .unwrap_or_else(|_| panic!("{name}: not closed in time"))
                .unwrap_or(0);
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8_lossy(&seen);
        // hyper may answer 408 before it closes; the idle one got its answer first.
        assert!(
            text.is_empty() || text.contains(" 408 ") || text.contains(" 200 "),
            "{name}: {text}"
        );
    }
    a.stop().await;
}

#[tokio::test]
async fn unknown_paths_and_methods_are_json_errors() {
    let a = Admin::start(StorageMode::Memory, vec![]).await;
    let r = a.get("/api/v2/streams").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["name"], "NotFound");
    let r = a.send("PUT", "/api/v1/streams", Some("{}")).await;
    assert_eq!(r.status, 405);
    assert_eq!(r.json()["error"]["code"], 21);
    let page = a.get("/").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<title>fogline</title>"));
    assert_eq!(a.get("/assets/dashboard.js").await.status, 200);
    a.stop().await;
}
