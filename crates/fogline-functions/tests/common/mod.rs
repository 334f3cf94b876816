//! Helpers shared by the integration tests: a real broker, a runner on it, and waits
//! bounded in time.
#![allow(dead_code)] // not every test binary uses every helper

use std::time::Duration;

use fogline_broker::link::LinkSubscription;
use fogline_broker::{Broker, BrokerConfig, StorageMode, SubscribeOptions};
use fogline_functions::{FunctionStore, InstanceId, InstanceInfo, Runner};
use tokio::sync::watch;

/// Longest any single wait in a test may take.
pub const WAIT: Duration = Duration::from_secs(10);

/// A broker with memory storage, a function store, a runner and the node's stop signal.
pub struct Node {
    pub broker: Broker,
    pub runner: Runner,
    pub stop: watch::Sender<bool>,
    pub dir: tempfile::TempDir,
}

impl Node {
    pub fn new() -> Node {
        Node::with(|_| {})
    }

    /// A node whose broker configuration `tune` changes.
    pub fn with(tune: impl FnOnce(&mut BrokerConfig)) -> Node {
        let dir = tempfile::tempdir().unwrap();
        let mut config = BrokerConfig {
            storage: StorageMode::Memory,
            data_dir: dir.path().join("data"),
            ..BrokerConfig::default()
        };
        tune(&mut config);
        let broker = Broker::open(config).unwrap().0;
        let store = FunctionStore::open(dir.path().join("functions")).unwrap();
        let (stop, stopped) = watch::channel(false);
        let runner = Runner::new(broker.clone(), store, stopped);
        Node {
            broker,
            runner,
            stop,
            dir,
        }
    }

    pub fn store(&self) -> &FunctionStore {
        self.runner.store()
    }

    /// A subscription on `filter` from a link of its own.
    pub fn subscribe(&self, filter: &str) -> LinkSubscription {
        let link = self.broker.link("test-reader");
        link.subscribe(filter, SubscribeOptions::default()).unwrap()
    }

    /// Publishes each payload on `topic` from a link of its own.
    pub async fn publish(&self, topic: &str, payloads: &[&[u8]]) {
        let link = self.broker.link("test-writer");
        for p in payloads {
            link.publish(topic, p).await.unwrap();
        }
    }

    /// Waits until instance `id` satisfies `ok`, and returns its snapshot.
    pub async fn wait_for(
        &self,
        id: InstanceId,
        ok: impl Fn(&InstanceInfo) -> bool,
    ) -> InstanceInfo {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let info = self.runner.get(id).unwrap();
            if ok(&info) {
                return info;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out: {info:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The next `n` payloads from `sub`, as strings.
pub async fn recv_n(sub: &mut LinkSubscription, n: usize) -> Vec<String> {
    let mut got = Vec::new();
    for _ in 0..n {
        let m = tokio::time::timeout(WAIT, sub.recv())
            .await
            .expect("a result in time")
            .expect("subscription open");
        got.push(String::from_utf8(m.payload.to_vec()).unwrap());
    }
    got
}

/// True while a process with this pid runs (a zombie, killed and not yet reaped by its
/// new parent, counts as gone).
pub fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // "pid (comm) state ...": the state follows the last ')'.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}
