//! The node's life: components start in order and report health, stop in reverse order on
//! one shutdown, and a component that cannot start stops the node with an error naming it.

use std::time::Duration;

use fogline_admin::ComponentState;
use fogline_broker::StorageMode;
use fogline_node::{Config, Node, NodeError};

fn config(dir: &std::path::Path) -> Config {
    let mut cfg = Config::default();
    cfg.native.listen = vec!["127.0.0.1:0".into()];
    cfg.mqtt.listen = vec!["127.0.0.1:0".into()];
    cfg.mqtt.ws_listen = vec!["127.0.0.1:0".into()];
    cfg.admin.listen = vec!["127.0.0.1:0".into()];
    cfg.broker.data_dir = dir.to_path_buf();
    cfg.broker.storage = StorageMode::Mmap;
    cfg.store.streams = vec!["default".into()];
    // A bridge to a Kafka that is not there: it runs (down, retrying) and stops on time.
    cfg.bridge.kafka = vec![fogline_bridge::KafkaOutConfig::new(
        "default",
        vec!["127.0.0.1:1".into()],
    )];
    // A geometric monitor of one node (its own peer entry is not used).
    cfg.gm.name = "lab".into();
    cfg.gm.nodes = 1;
    cfg.gm.peers = vec!["unused".into()];
    // And an MQTT bridge to a broker that is not there either.
    cfg.bridge.mqtt = vec![fogline_bridge::MqttConfig::new(
        "127.0.0.1:1",
        Some("default".into()),
        vec!["# both 1".into()],
    )];
    cfg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn components_start_in_order_and_stop_in_reverse() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(config(dir.path())).await.unwrap();
    let kinds: Vec<String> = node.endpoints().into_iter().map(|(_, e)| e.kind).collect();
    assert_eq!(kinds, ["native", "mqtt", "mqtt-ws", "http"]);
    let board = node.health().clone();
    use fogline_admin::Components;
    assert!(board
        .components()
        .iter()
        .all(|c| c.state == ComponentState::Running));
    let native = node.address("native").unwrap();
    let id = node.info().id.clone();
    assert_eq!(id.len(), 16);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(node.run(async {
        let _ = rx.await;
    }));
    tx.send(()).unwrap();
    running.await.unwrap().expect("the node stops cleanly");
    let stops: Vec<String> = board
        .history()
        .into_iter()
        .filter(|(_, s)| *s == ComponentState::Stopped)
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        stops,
        ["admin", "gm", "bridge", "store", "rules", "mqtt", "native", "broker"]
    );
    // Nothing listens any more.
    assert!(tokio::net::TcpStream::connect(&native).await.is_err());
    // The node keeps its id across restarts.
    let again = Node::start(config(dir.path())).await.unwrap();
    assert_eq!(again.info().id, id);
    again.run(async {}).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_that_cannot_start_stops_the_node_and_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken_addr = taken.local_addr().unwrap().to_string();
    // The native listener starts first on a free port we can watch.
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let native = probe.local_addr().unwrap().to_string();
    drop(probe);
    let mut cfg = config(dir.path());
    cfg.native.listen = vec![native.clone()];
    cfg.mqtt.listen = vec![taken_addr.clone()];
    let err = Node::start(cfg).await.err().expect("refused");
    match &err {
        NodeError::Start { component, source } => {
            assert_eq!(*component, "mqtt");
            let why = source.to_string();
            assert!(why.contains(&taken_addr), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.to_string(), "component mqtt failed to start");
    // The native listener that had started was stopped: its port is free again.
    std::net::TcpListener::bind(&native).expect("the native port was released");
    // A broker that cannot open is named too.
    std::fs::write(dir.path().join("node/streams.json"), b"{").unwrap();
    let err = Node::start(config(dir.path()))
        .await
        .err()
        .expect("refused");
    assert!(
        matches!(
            err,
            NodeError::Start {
                component: "broker",
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn components_without_listeners_are_disabled_not_failed() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.mqtt.listen.clear();
    cfg.mqtt.ws_listen.clear();
    cfg.admin.listen.clear();
    cfg.rules.enabled = false;
    cfg.store.streams.clear();
    cfg.bridge.kafka.clear();
    cfg.bridge.mqtt.clear();
    cfg.gm.name.clear();
    let node = Node::start(cfg).await.unwrap();
    use fogline_admin::Components;
    let states: Vec<_> = node
        .health()
        .components()
        .into_iter()
        .map(|c| (c.name, c.state))
        .collect();
    assert_eq!(
        states,
        [
            ("broker".to_string(), ComponentState::Running),
            ("native".to_string(), ComponentState::Running),
            ("mqtt".to_string(), ComponentState::Disabled),
            ("rules".to_string(), ComponentState::Disabled),
            ("store".to_string(), ComponentState::Disabled),
            ("bridge".to_string(), ComponentState::Disabled),
            ("gm".to_string(), ComponentState::Disabled),
            ("admin".to_string(), ComponentState::Disabled),
        ]
    );
    tokio::time::timeout(Duration::from_secs(10), node.run(async {}))
        .await
        .unwrap()
        .unwrap();
}
