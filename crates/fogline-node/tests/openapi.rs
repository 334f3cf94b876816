//! The admin API's description includes the routes other components hand it.

use std::time::Duration;

use fogline_broker::StorageMode;
use fogline_node::{Config, Node};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_description_covers_the_rules_and_functions_routes() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::default();
    cfg.native.listen = vec!["127.0.0.1:0".into()];
    cfg.mqtt.listen.clear();
    cfg.admin.listen = vec!["127.0.0.1:0".into()];
    cfg.broker.data_dir = dir.path().to_path_buf();
    cfg.broker.storage = StorageMode::Mmap;
    let node = Node::start(cfg).await.unwrap();
    let http = node.address("http").unwrap();
    let r = fogline_rules::sink::request(
        "GET",
        &format!("http://{http}/api/v1/openapi.json"),
        bytes::Bytes::new(),
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    assert_eq!(r.status, 200);
    let doc: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    let paths = doc["paths"].as_object().unwrap();
    for p in [
        "/api/v1/streams",
        "/api/v1/rules",
        "/api/v1/rules/{id}/status",
        "/api/v1/patterns/{name}",
        "/api/v1/functions/{name}/start",
    ] {
        assert!(paths.contains_key(p), "{p} missing");
    }
    assert!(doc["components"]["schemas"]["Rule"].is_object());
    assert!(doc["components"]["schemas"]["Stream"].is_object());
    node.run(async {}).await.unwrap();
}
