//! What the admin API serves from: the broker, the node's identity, its components' health
//! and the metrics registry.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fogline_broker::{Broker, StorageMode};
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use serde::Serialize;

/// The node's identity and settings, fixed while it runs.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    /// The node's id (`[node] id`, or one generated and kept in the data directory).
    pub id: String,
    /// When the node started, microseconds since the UNIX epoch.
    pub started_at_us: u64,
    /// Where file-backed streams keep their data.
    pub data_dir: PathBuf,
    /// The default storage of streams.
    pub storage: StorageMode,
}

/// Where a component is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ComponentState {
    /// Being started.
    Starting,
    /// Serving.
    Running,
    /// Told to stop, not stopped yet.
    Stopping,
    /// Stopped.
    Stopped,
    /// Failed to start, or ended on its own.
    Failed,
    /// Not started: the configuration gives it nothing to do (no listeners).
    Disabled,
}

impl ComponentState {
    /// Whether the node is healthy with a component in this state.
    pub fn is_healthy(self) -> bool {
        matches!(self, ComponentState::Running | ComponentState::Disabled)
    }
}

/// One listener of a component.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Endpoint {
    /// What it speaks: `native`, `mqtt`, `mqtt-ws`, `http`.
    pub kind: String,
    /// Its bound address.
    pub address: String,
    /// How it is protected: `open` (anyone who reaches it), `password` (clients must log
    /// in: `[auth]` admits no anonymous clients, or the admin API has a token), `tls`
    /// (encrypted, anyone may connect) or `tls+password`.
    pub security: String,
}

/// A component's health, as `/healthz` and `/api/v1/node` report it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ComponentStatus {
    /// Its name.
    pub name: String,
    /// Its state.
    pub state: ComponentState,
    /// Why it failed, or other detail.
    pub detail: Option<String>,
    /// Its listeners.
    pub endpoints: Vec<Endpoint>,
}

/// Where the admin API reads the components' health from (the node's health board).
pub trait Components: Send + Sync + 'static {
    /// Every component, in start order.
    fn components(&self) -> Vec<ComponentStatus>;
}

/// Fields a component adds to the live feed's snapshot, so the dashboard can draw a panel
/// for it without the admin API knowing the component. Called for every snapshot sent to
/// every reader: keep it cheap and bounded.
pub trait FeedFields: Send + Sync + 'static {
    /// Adds its fields to `into`, under names the snapshot does not use.
    fn add(&self, into: &mut serde_json::Map<String, serde_json::Value>);
}

/// Everything the admin API serves from.
#[derive(Clone)]
pub struct AdminState {
    /// The broker.
    pub broker: Broker,
    /// The node.
    pub node: NodeInfo,
    /// The components' health.
    pub components: Arc<dyn Components>,
    /// The metrics registry `/metrics` encodes (components add their collectors to it).
    pub registry: Arc<Mutex<Registry>>,
    /// How often the live feed sends a snapshot.
    pub events_interval: Duration,
    /// Components' fields of the live feed (see [`FeedFields`]).
    pub feed: Vec<Arc<dyn FeedFields>>,
}
