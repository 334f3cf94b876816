//! Functions on demand through the node's admin API: store (a process and a wasm module),
//! list, start, stop, delete, their instances and their counters in `/metrics`.

use std::time::Duration;

use axum::body::Bytes;
use fogline_broker::{StorageMode, SubscribeOptions};
use fogline_node::{Config, Node};
use fogline_rules::sink::request;
use serde_json::{json, Value};

fn config(dir: &std::path::Path, storage: StorageMode) -> Config {
    let mut cfg = Config::default();
    cfg.native.listen = vec!["127.0.0.1:0".into()];
    cfg.mqtt.listen.clear();
    cfg.mqtt.ws_listen.clear();
    cfg.admin.listen = vec!["127.0.0.1:0".into()];
    cfg.broker.data_dir = dir.to_path_buf();
    cfg.broker.storage = storage;
    cfg
}

/// Calls the admin API; answers the status and the body (JSON, or the text as a string).
async fn call(http: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let body = body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()));
    let url = format!("http://{http}{path}");
    let r = request(method, &url, body, Duration::from_secs(10))
        .await
        .unwrap();
    let v = serde_json::from_slice(&r.body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&r.body).into()));
    (r.status, v)
}

const UPPER: &str = include_str!("../../fogline-functions/tests/wasm/upper.wat");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_list_start_stop_delete_over_rest() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path(), StorageMode::Mmap))
        .await
        .unwrap();
    let http = node.address("http").unwrap();
    let link = node.broker().link("test");
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(node.run(async {
        let _ = rx.await;
    }));
    let h = http.as_str();

    let bang = json!({"name": "bang", "profile": {"stage": "shout"},
        "kind": {"type": "process", "command": "/bin/sh",
                 "args": ["-c", "while read l; do echo \"$l!\"; done"]}});
    assert_eq!(
        call(h, "POST", "/api/v1/functions", Some(bang.clone()))
            .await
            .0,
        201
    );
    assert_eq!(
        call(h, "POST", "/api/v1/functions", Some(bang)).await.0,
        409
    );
    use base64::Engine as _;
    let module = base64::engine::general_purpose::STANDARD.encode(wat::parse_str(UPPER).unwrap());
    let up = json!({"name": "up", "kind": {"type": "wasm"}, "module": module});
    assert_eq!(
        call(h, "PUT", "/api/v1/functions/up", Some(up)).await.0,
        200
    );
    let bad = json!({"name": "nope", "kind": {"type": "wasm"}});
    assert_eq!(call(h, "POST", "/api/v1/functions", Some(bad)).await.0, 400);

    let (status, list) = call(h, "GET", "/api/v1/functions", None).await;
    assert_eq!(status, 200);
    let kinds: Vec<(&str, &str)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap(), f["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds, [("bang", "process"), ("up", "wasm")]);
    assert_eq!(list[0]["profile"], json!({"stage": "shout"}));

    let mut out = link
        .subscribe("out/#", SubscribeOptions::default())
        .unwrap();
    let on = |s: &str, o: &str| Some(json!({"source": s, "output": o}));
    let (status, started) = call(
        h,
        "POST",
        "/api/v1/functions/bang/start",
        on("t/in", "out/t"),
    )
    .await;
    assert_eq!(
        (status, &started["started"]),
        (200, &json!(true)),
        "{started}"
    );
    let id = started["instance"]["id"].clone();
    // Starting it where it already runs answers the same instance.
    let (_, again) = call(
        h,
        "POST",
        "/api/v1/functions/bang/start",
        on("t/in", "out/t"),
    )
    .await;
    assert_eq!(
        (&again["started"], &again["instance"]["id"]),
        (&json!(false), &id)
    );
    let (status, _) = call(h, "POST", "/api/v1/functions/up/start", on("w/in", "out/w")).await;
    assert_eq!(status, 200);

    link.publish_acked("t/in", "hi").await.unwrap();
    link.publish_acked("w/in", "abc").await.unwrap();
    let mut got = Vec::new();
    for _ in 0..2 {
        let m = tokio::time::timeout(Duration::from_secs(10), out.recv())
            .await
            .unwrap()
            .unwrap();
        got.push((
            m.topic.to_string(),
            String::from_utf8_lossy(&m.payload).into_owned(),
        ));
    }
    got.sort();
    assert_eq!(
        got,
        [
            ("out/t".into(), "hi!".into()),
            ("out/w".into(), "ABC".into())
        ]
    );

    let (_, instances) = call(h, "GET", "/api/v1/functions/instances", None).await;
    let bang_i = instances
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == id)
        .unwrap();
    assert_eq!(
        (
            &bang_i["state"],
            &bang_i["records_in"],
            &bang_i["records_out"]
        ),
        (&json!("running"), &json!(1), &json!(1))
    );
    let (_, metrics) = call(h, "GET", "/metrics", None).await;
    let metrics = metrics.as_str().unwrap().to_string();
    assert!(
        metrics.contains("fogline_function_records_out_total{function=\"bang\"} 1"),
        "{metrics}"
    );

    // Delete is refused while it runs; stop, then delete.
    assert_eq!(
        call(h, "DELETE", "/api/v1/functions/bang", None).await.0,
        409
    );
    let (status, stopped) = call(h, "POST", "/api/v1/functions/bang/stop", None).await;
    assert_eq!((status, &stopped["stopped"]), (200, &json!([id])));
    assert_eq!(
        call(h, "DELETE", "/api/v1/functions/bang", None).await.0,
        200
    );
    assert_eq!(call(h, "GET", "/api/v1/functions/bang", None).await.0, 404);
    // A forced delete stops the running wasm instance.
    assert_eq!(
        call(h, "DELETE", "/api/v1/functions/up?force=true", None)
            .await
            .0,
        200
    );
    // Its instance ends shortly after: the delete signals it, the task then winds down.
    for _ in 0..100 {
        let (_, instances) = call(h, "GET", "/api/v1/functions/instances", None).await;
        if instances
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["state"] == "stopped")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, instances) = call(h, "GET", "/api/v1/functions/instances", None).await;
    assert!(
        instances
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["state"] == "stopped"),
        "{instances}"
    );
    assert_eq!(call(h, "GET", "/api/v1/functions", None).await.1, json!([]));

    tx.send(()).unwrap();
    running.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_node_runs_no_functions_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path(), StorageMode::Memory))
        .await
        .unwrap();
    let http = node.address("http").unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(node.run(async {
        let _ = rx.await;
    }));
    let (status, v) = call(&http, "GET", "/api/v1/functions", None).await;
    assert_eq!(status, 501);
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("memory"), "{msg}");
    assert!(!dir.path().join(".rules").exists());
    tx.send(()).unwrap();
    running.await.unwrap().unwrap();
}
