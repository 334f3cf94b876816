//! Test harness: a broker and the admin API on 127.0.0.1:0, and a plain HTTP/1.1 client.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use fogline_admin::{
    AdminConfig, AdminServer, AdminState, ComponentState, ComponentStatus, Components, FeedFields,
    NodeInfo,
};
use fogline_broker::{Broker, BrokerConfig, StorageMode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

pub const WAIT: Duration = Duration::from_secs(10);

/// A fixed health board.
pub struct Fixed(pub Vec<ComponentStatus>);

impl Components for Fixed {
    fn components(&self) -> Vec<ComponentStatus> {
        self.0.clone()
    }
}

pub fn running(name: &str) -> ComponentStatus {
    ComponentStatus {
        name: name.into(),
        state: ComponentState::Running,
        detail: None,
        endpoints: vec![],
    }
}

pub struct Admin {
    pub addr: String,
    pub broker: Broker,
    pub dir: tempfile::TempDir,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Admin {
    pub async fn start(storage: StorageMode, components: Vec<ComponentStatus>) -> Admin {
        Admin::start_with(storage, components, Vec::new()).await
    }

    /// As `start`, with components' fields in the live feed.
    pub async fn start_with(
        storage: StorageMode,
        components: Vec<ComponentStatus>,
        feed: Vec<Arc<dyn FeedFields>>,
    ) -> Admin {
        let dir = tempfile::tempdir().expect("tempdir");
        let (broker, _) = Broker::open(BrokerConfig {
            storage,
            data_dir: dir.path().to_path_buf(),
            ..BrokerConfig::default()
        })
        .expect("broker");
        let components: Arc<dyn Components> = Arc::new(Fixed(components));
        let mut registry = prometheus_client::registry::Registry::default();
        fogline_admin::metrics::register(
            &mut registry,
            broker.clone(),
            dir.path().to_path_buf(),
            fogline_broker::now_micros(),
            components.clone(),
        );
        let state = AdminState {
            broker: broker.clone(),
            node: NodeInfo {
                id: "test-node".into(),
                started_at_us: fogline_broker::now_micros(),
                data_dir: dir.path().to_path_buf(),
                storage,
            },
            components,
            registry: Arc::new(parking_lot::Mutex::new(registry)),
            events_interval: Duration::from_millis(100),
            feed,
        };
        let cfg = AdminConfig {
            listen: vec!["127.0.0.1:0".into()],
            header_read_timeout: Duration::from_millis(500),
            ..AdminConfig::default()
        };
        let server = AdminServer::bind(cfg, state, vec![]).await.expect("binds");
        let addr = server.local_addrs()[0].clone();
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(server.run(stopped));
        Admin {
            addr,
            broker,
            dir,
            stop,
            task,
        }
    }

    pub async fn stop(self) {
        self.stop.send_replace(true);
        let _ = self.task.await;
    }

    pub async fn get(&self, path: &str) -> Response {
        http(&self.addr, "GET", path, None, &[]).await
    }

    pub async fn send(&self, method: &str, path: &str, body: Option<&str>) -> Response {
        http(&self.addr, method, path, body, &[]).await
    }
}

#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One HTTP/1.1 request with `Connection: close`; the whole answer (Content-Length bodies).
pub async fn http(
    addr: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> Response {
    let mut sock = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    if let Some(b) = body {
        req.push_str(b);
    }
    sock.write_all(req.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    tokio::time::timeout(WAIT, sock.read_to_end(&mut raw))
        .await
        .expect("an answer in time")
        .expect("read");
    parse(&raw)
}

pub fn parse(raw: &[u8]) -> Response {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").expect("a head");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    Response {
        status,
        headers,
        body: body.to_string(),
    }
}
