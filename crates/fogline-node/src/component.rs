//! What a component is to the node: a name and a start function. A component is a folder
//! of `components/` with its start function and its tests; its configuration is its own
//! section of [`Config`](crate::Config). Adding one is a folder, a section and a line in
//! `components::ALL`: no other component's code changes.
//!
//! A start function binds what the component needs (listeners, files) and returns the
//! future that serves until the component's stop signal turns true, or `None` when the
//! configuration gives it nothing to do. A start that fails stops the node with an error
//! naming the component; a serving future that ends before it was told to stop is a failure
//! of the node too (nothing restarts components behind an operator's back).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use fogline_admin::{Endpoint, FeedFields, NodeInfo};
use fogline_broker::Broker;
use fogline_net::intake::ReadBudget;
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

use crate::config::Config;
use crate::health::Board;

/// Any error a component reports.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A future a component runs on.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a component's start function gets.
pub struct Context {
    /// The broker (components publish, subscribe and consume through it, or its link).
    pub broker: Broker,
    /// The node's identity.
    pub node: NodeInfo,
    /// Turns true when the component must stop.
    pub stop: watch::Receiver<bool>,
    /// The metrics registry: a component registers its collectors here.
    pub metrics: Arc<Mutex<Registry>>,
    /// The components' health, for the admin API.
    pub health: Arc<Board>,
    /// The budget every listener's connections read under (`[node] read_buffer_budget`).
    pub read_budget: Arc<ReadBudget>,
    /// HTTP routes (with their OpenAPI description) components hand to the admin API
    /// (started last, it serves them all).
    pub routes: Arc<Mutex<Vec<fogline_admin::ExtraRoutes>>>,
    /// Fields components add to the admin API's live feed (their dashboard panels).
    pub feed: Arc<Mutex<Vec<Arc<dyn FeedFields>>>>,
    /// The acceptors of TLS listeners: a component adds its own, and the node reloads
    /// them all (SIGHUP).
    pub tls: fogline_net::tls::TlsSet,
}

/// A started component.
pub struct Started {
    /// Its listeners.
    pub endpoints: Vec<Endpoint>,
    /// Serves until the stop signal; an error is the component's failure.
    pub task: BoxFuture<'static, Result<(), BoxError>>,
}

/// A start function.
pub type StartFn =
    for<'a> fn(&'a Config, &'a Context) -> BoxFuture<'a, Result<Option<Started>, BoxError>>;

/// A component of the node.
#[derive(Clone, Copy)]
pub struct Component {
    /// Its name, in health, logs and errors.
    pub name: &'static str,
    /// How it starts.
    pub start: StartFn,
}

/// Listeners of `kind` as endpoints; `guarded`: clients must log in.
pub(crate) fn endpoints(kind: &str, addrs: Vec<String>, guarded: bool) -> Vec<Endpoint> {
    let tls = matches!(kind, "native-tls" | "mqtts" | "mqtt-wss" | "https");
    let security = match (tls, guarded) {
        (false, false) => "open",
        (false, true) => "password",
        (true, false) => "tls",
        (true, true) => "tls+password",
    };
    addrs
        .into_iter()
        .map(|address| Endpoint {
            kind: kind.to_string(),
            address,
            security: security.to_string(),
        })
        .collect()
}
