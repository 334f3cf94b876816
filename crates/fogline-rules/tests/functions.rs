//! Functions on demand from IF-THEN triggers: a trigger starts a process function on a
//! topic, its results come back on the output topic, and another trigger stops it (the
//! child killed and reaped).

use std::sync::Arc;
use std::time::Duration;

use fogline_broker::{Broker, BrokerConfig, StorageMode, StreamConfig, SubscribeOptions};
use fogline_functions::{FunctionSpec, FunctionStore, InstanceState, Runner};
use fogline_rules::functions::FunctionService;
use fogline_rules::{RuleSpec, Rules};

fn broker(dir: &std::path::Path) -> Broker {
    let config = BrokerConfig {
        storage: StorageMode::Mmap,
        data_dir: dir.to_path_buf(),
        ..BrokerConfig::default()
    };
    let b = Broker::open(config).unwrap().0;
    let sql = r#"CREATE STREAM demo (id STRING, temperature FLOAT)
        WITH (DATASOURCE="sensors/+/temp", FORMAT="json")"#;
    let mut cfg = StreamConfig::new("demo", vec!["sensors/+/temp".into()]);
    cfg.sql = Some(sql.to_string());
    b.create_stream(cfg).unwrap();
    b
}

async fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    for _ in 0..200 {
        if ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trigger_starts_a_process_function_and_another_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path());
    let store = FunctionStore::open(dir.path().join("functions")).unwrap();
    let script = r#"while read l; do echo "$l!"; done"#;
    store
        .store(&FunctionSpec::process("bang", "/bin/sh", ["-c", script]))
        .unwrap();
    let (_stop_tx, stop) = tokio::sync::watch::channel(false);
    let service = FunctionService::new(Runner::new(b.clone(), store, stop));
    let rules = Rules::open(b.clone(), None, Some(Arc::new(service.clone())), 10).unwrap();
    let spec = serde_json::json!({
        "id": "ctl",
        "sql": "SELECT * FROM demo",
        "triggers": [
            {"name": "go", "if": "temperature > 100", "fire": "once",
             "then": {"function": {"start": "bang", "source": "text/in", "output": "text/out"}}},
            {"name": "halt", "if": "temperature < 0",
             "then": {"function": {"stop": "bang"}}}
        ]
    });
    rules
        .create(RuleSpec::from_json(spec.to_string().as_bytes()).unwrap())
        .unwrap();
    let link = b.link("test");
    let mut out = link
        .subscribe("text/out", SubscribeOptions::default())
        .unwrap();
    let reading = |t: f64| serde_json::json!({"id": "a", "temperature": t}).to_string();
    let running = || {
        service
            .instances(Some("bang"))
            .into_iter()
            .filter(|i| i.state == InstanceState::Running)
            .collect::<Vec<_>>()
    };

    link.publish_acked("sensors/a/temp", reading(150.0))
        .await
        .unwrap();
    wait_for("the trigger to start the function", || running().len() == 1).await;
    let pid = running()[0].pid.expect("a child");
    for word in ["hello", "edge"] {
        link.publish_acked("text/in", word).await.unwrap();
        let m = tokio::time::timeout(Duration::from_secs(10), out.recv())
            .await
            .expect("a result within 10 s")
            .unwrap();
        assert_eq!(&m.payload[..], format!("{word}!").as_bytes());
    }

    link.publish_acked("sensors/a/temp", reading(-5.0))
        .await
        .unwrap();
    wait_for("the trigger to stop the function", || running().is_empty()).await;
    // Killed and reaped: not even a zombie is left.
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    link.publish_acked("text/in", "late").await.unwrap();
    let after = tokio::time::timeout(Duration::from_millis(500), out.recv()).await;
    assert!(after.is_err(), "a result after stop: {after:?}");

    let totals = service.totals()["bang"];
    assert_eq!((totals.records_in, totals.records_out), (2, 2));
    assert_eq!(totals.failures, 0);
    let ended = service.instances(Some("bang"));
    assert_eq!(ended[0].state, InstanceState::Stopped);
    rules.shut_down().await;
}
