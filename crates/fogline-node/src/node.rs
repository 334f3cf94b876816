//! A running node: the broker, then the components in order, one stop signal each, health.
//!
//! Start: the broker opens (recovering every stream), then each component of
//! `components::ALL` starts in order. One that fails to start stops those already started
//! (in reverse) and the node reports which failed and why. Stop (a shutdown signal, or a
//! component that ended on its own): components are told to stop in reverse order, each
//! waited for before the next is told (the admin API first, the listeners after it), then
//! the broker's retention task and the memory task (`memory`) end and every durable
//! consumer position reaches the disk.
//! Nothing acknowledged is lost on the way: a record is acknowledged only once stored.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use fogline_admin::{ComponentState, Endpoint, NodeInfo};
use fogline_broker::{Broker, StorageMode};
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::component::{BoxError, Context};
use crate::components::ALL;
use crate::config::Config;
use crate::health::Board;

/// How often retention runs over every stream.
const RETENTION_EVERY: Duration = Duration::from_secs(10);
/// A component still stopping after this is reported (and still waited for).
const STOP_WARNING: Duration = Duration::from_secs(10);

/// Why a node could not start, or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// A component could not start (its listener's address is in use, its data cannot be
    /// opened): the node did not start.
    #[error("component {component} failed to start")]
    Start {
        /// The component.
        component: &'static str,
        /// Why.
        #[source]
        source: BoxError,
    },
    /// A component stopped on its own while the node ran: the node stopped.
    #[error("component {component} stopped on its own: {message}")]
    Failed {
        /// The component.
        component: &'static str,
        /// What it reported.
        message: String,
    },
}

struct Running {
    name: &'static str,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// A started node.
pub struct Node {
    broker: Broker,
    info: NodeInfo,
    board: Arc<Board>,
    running: Vec<Running>,
    /// Each component's result as its task ends, with its index in `running`.
    done: mpsc::UnboundedReceiver<(usize, Result<(), BoxError>)>,
    retention: (watch::Sender<bool>, JoinHandle<()>),
    /// Hands freed memory back after connections end (glibc only; see `memory`).
    memory: Option<(watch::Sender<bool>, JoinHandle<()>)>,
    /// The TLS listeners' acceptors, reloaded together.
    tls: fogline_net::tls::TlsSet,
}

impl Node {
    /// Opens the broker and starts every component.
    ///
    /// # Errors
    /// [`NodeError::Start`] naming the component (`broker` for the broker) that could not
    /// start; whatever had started is stopped first.
    pub async fn start(config: Config) -> Result<Node, NodeError> {
        let names: Vec<&str> = std::iter::once("broker")
            .chain(ALL.iter().map(|c| c.name))
            .collect();
        let board = Arc::new(Board::new(&names));
        let started_at_us = fogline_broker::now_micros();
        let broker_cfg = config.broker.clone();
        let opened = tokio::task::spawn_blocking(move || Broker::open(broker_cfg))
            .await
            .map_err(|e| NodeError::Start {
                component: "broker",
                source: e.into(),
            })?;
        let (broker, reports) = opened.map_err(|e| NodeError::Start {
            component: "broker",
            source: e.into(),
        })?;
        for (stream, report) in reports {
            log_recovery(&stream, &report);
        }
        // Before any listener opens: no connection is ever admitted without the files.
        broker
            .guard()
            .configure(&config.auth)
            .map_err(|e| NodeError::Start {
                component: "broker",
                source: e.into(),
            })?;
        board.set("broker", ComponentState::Running, None);
        let info = NodeInfo {
            id: node_id(&config),
            started_at_us,
            data_dir: config.broker.data_dir.clone(),
            storage: config.broker.storage,
        };
        let read_budget =
            fogline_net::intake::ReadBudget::new(config.node.read_buffer_budget.as_u64() as usize);
        let mut registry = Registry::default();
        fogline_admin::metrics::register(
            &mut registry,
            broker.clone(),
            info.data_dir.clone(),
            started_at_us,
            board.clone(),
        );
        registry.register_collector(Box::new(crate::intake_metrics::IntakeCollector(
            read_budget.clone(),
        )));
        let metrics = Arc::new(Mutex::new(registry));
        let routes = Arc::new(Mutex::new(Vec::new()));
        let feed = Arc::new(Mutex::new(Vec::new()));
        let (done_tx, done) = mpsc::unbounded_channel();
        let mut node = Node {
            retention: retention(broker.clone()),
            memory: crate::memory::spawn(broker.clone()),
            broker,
            info,
            board,
            running: Vec::new(),
            done,
            tls: fogline_net::tls::TlsSet::default(),
        };
        for component in ALL {
            let (stop, stopped) = watch::channel(false);
            let ctx = Context {
                broker: node.broker.clone(),
                node: node.info.clone(),
                stop: stopped,
                metrics: metrics.clone(),
                health: node.board.clone(),
                read_budget: read_budget.clone(),
                routes: routes.clone(),
                feed: feed.clone(),
                tls: node.tls.clone(),
            };
            match (component.start)(&config, &ctx).await {
                Ok(Some(started)) => {
                    for e in &started.endpoints {
                        tracing::info!(component = component.name, kind = %e.kind, address = %e.address, "listening");
                    }
                    node.board.set_endpoints(component.name, started.endpoints);
                    node.board
                        .set(component.name, ComponentState::Running, None);
                    let index = node.running.len();
                    let tx = done_tx.clone();
                    let task = tokio::spawn(async move {
                        let result = started.task.await;
                        let _ = tx.send((index, result));
                    });
                    node.running.push(Running {
                        name: component.name,
                        stop,
                        task,
                    });
                }
                Ok(None) => {
                    node.board
                        .set(component.name, ComponentState::Disabled, None);
                }
                Err(source) => {
                    let detail = Some(source.to_string());
                    node.board
                        .set(component.name, ComponentState::Failed, detail);
                    node.shut_down().await;
                    return Err(NodeError::Start {
                        component: component.name,
                        source,
                    });
                }
            }
        }
        Ok(node)
    }

    /// The broker.
    pub fn broker(&self) -> &Broker {
        &self.broker
    }

    /// The node's identity.
    pub fn info(&self) -> &NodeInfo {
        &self.info
    }

    /// The acceptors of every TLS listener: [`TlsSet::reload`](fogline_net::tls::TlsSet::reload)
    /// reads their certificates again (new connections get them, live ones keep theirs).
    pub fn tls(&self) -> fogline_net::tls::TlsSet {
        self.tls.clone()
    }

    /// The node's users and access control: [`Guard::reload`](fogline_broker::Guard::reload)
    /// reads the password and ACL files again.
    pub fn guard(&self) -> Arc<fogline_broker::Guard> {
        self.broker.guard().clone()
    }

    /// The components' health.
    pub fn health(&self) -> &Arc<Board> {
        &self.board
    }

    /// Every listener, with its component's name, in start order.
    pub fn endpoints(&self) -> Vec<(String, Endpoint)> {
        use fogline_admin::Components;
        self.board
            .components()
            .into_iter()
            .flat_map(|c| {
                let name = c.name;
                c.endpoints.into_iter().map(move |e| (name.clone(), e))
            })
            .collect()
    }

    /// The first bound address of listeners of `kind` (`native`, `mqtt`, `mqtt-ws`, `http`).
    pub fn address(&self, kind: &str) -> Option<String> {
        self.endpoints()
            .into_iter()
            .find(|(_, e)| e.kind == kind)
            .map(|(_, e)| e.address)
    }

    /// Serves until `shutdown` completes or a component stops on its own; then stops every
    /// component in reverse order and the broker.
    ///
    /// # Errors
    /// [`NodeError::Failed`] when a component stopped on its own (the others were stopped).
    pub async fn run(mut self, shutdown: impl Future<Output = ()>) -> Result<(), NodeError> {
        tokio::pin!(shutdown);
        let failed = tokio::select! {
            () = &mut shutdown => None,
            Some((index, result)) = self.done.recv() => Some((index, result)),
        };
        let err = failed.map(|(index, result)| {
            let component = self.running[index].name;
            let message = match result {
                Ok(()) => "it ended without being told to stop".to_string(),
                Err(e) => e.to_string(),
            };
            tracing::error!(component, %message, "a component stopped on its own; stopping the node");
            self.board
                .set(component, ComponentState::Failed, Some(message.clone()));
            NodeError::Failed { component, message }
        });
        if err.is_none() {
            tracing::info!("shutting down");
        }
        self.shut_down().await;
        err.map_or(Ok(()), Err)
    }

    /// Stops every running component in reverse start order, each waited for before the
    /// next is told, then the broker's own tasks; durable positions reach the disk.
    async fn shut_down(&mut self) {
        while let Some(r) = self.running.pop() {
            if self.board.state(r.name) != Some(ComponentState::Failed) {
                self.board.set(r.name, ComponentState::Stopping, None);
            }
            r.stop.send_replace(true);
            let mut task = r.task;
            if tokio::time::timeout(STOP_WARNING, &mut task).await.is_err() {
                tracing::warn!(component = r.name, "still stopping after {STOP_WARNING:?}");
                let _ = task.await;
            }
            if self.board.state(r.name) != Some(ComponentState::Failed) {
                self.board.set(r.name, ComponentState::Stopped, None);
            }
        }
        self.retention.0.send_replace(true);
        // Not aborted: a retention pass under way on a blocking thread holds the broker.
        let _ = (&mut self.retention.1).await;
        if let Some((stop, task)) = &mut self.memory {
            stop.send_replace(true);
            let _ = task.await;
        }
        let broker = self.broker.clone();
        let _ = tokio::task::spawn_blocking(move || broker.sync_positions()).await;
        self.board.set("broker", ComponentState::Stopped, None);
    }
}

/// The retention task: every stream's limits applied every [`RETENTION_EVERY`].
fn retention(broker: Broker) -> (watch::Sender<bool>, JoinHandle<()>) {
    let (stop, mut stopped) = watch::channel(false);
    let task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(RETENTION_EVERY);
        loop {
            tokio::select! {
                _ = stopped.wait_for(|s| *s) => return,
                _ = tick.tick() => {}
            }
            let b = broker.clone();
            if tokio::task::spawn_blocking(move || b.enforce_retention())
                .await
                .is_err()
            {
                tracing::warn!("retention task panicked");
            }
        }
    });
    (stop, task)
}

/// The node's id: the configured one, else the one kept in `<data_dir>/node/id` (written at
/// the first start), else (a node that keeps no files) a fresh one.
fn node_id(config: &Config) -> String {
    if !config.node.id.is_empty() {
        return config.node.id.clone();
    }
    let fresh = || {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(fogline_broker::now_micros());
        h.write_u32(std::process::id());
        format!("{:016x}", h.finish())
    };
    if config.broker.storage == StorageMode::Memory {
        return fresh();
    }
    let path = config.broker.data_dir.join("node").join("id");
    if let Ok(id) = std::fs::read_to_string(&path) {
        let id = id.trim();
        if !id.is_empty() {
            return id.to_string();
        }
    }
    let id = fresh();
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&path, format!("{id}\n")));
    if let Err(e) = written {
        tracing::warn!(path = %path.display(), error = %e, "cannot keep the node's id; a new one is made at the next start");
    }
    id
}

/// Logs a stream's recovery: one line when it opened clean, and one warning for each
/// stretch of records that damage cost, or that a missing segment file took.
fn log_recovery(stream: &str, report: &fogline_broker::RecoveryReport) {
    for r in &report.repairs {
        match r.end_offset {
            Some(end) => tracing::warn!(
                stream,
                first_offset = r.first_offset,
                end_offset = end,
                file = %r.file.display(),
                position = r.position,
                damage = %r.damage,
                "records lost to damage were dropped; the records after them are kept"
            ),
            None => tracing::warn!(
                stream,
                from_offset = r.first_offset,
                file = %r.file.display(),
                position = r.position,
                bytes = r.bytes,
                damage = %r.damage,
                "the active segment's damaged tail was cut (a write torn by a crash?)"
            ),
        }
    }
    for (first, end) in &report.gaps {
        tracing::warn!(
            stream,
            first_offset = first,
            end_offset = end,
            "records missing: a segment file is gone (`fogline log verify --repair` marks them lost)"
        );
    }
    tracing::info!(stream, %report, "stream opened");
}
