//! fogline's HTTP admin API: the node's streams, consumers, connections and subscriptions as
//! JSON (`openapi.json` describes every route), stream and consumer management, Prometheus
//! metrics (`/metrics`), a live feed (`/api/v1/events`, Server-Sent Events, with fields
//! components add), live records on topics (`/api/v1/subscribe`) and the dashboard that
//! draws them (`/`).
//!
//! - `config`: the `[admin]` section. `state`: what it serves from ([`AdminState`]).
//! - `api`: the routes and the JSON errors; `views`: the JSON answers.
//! - `metrics`: the collectors `/metrics` encodes; `process`: `/proc` readings.
//! - `events`: the live feed. `server`: the listeners, on the transport layer.
//! - `assets/`: the dashboard (one page, plain SVG charts, no JavaScript libraries).
#![deny(missing_docs)]

mod api;
mod auth;
mod config;
mod events;
pub mod metrics;
pub mod process;
mod server;
mod state;
mod time;
pub mod views;

pub use api::error::{status_of, ApiError};
pub use api::OPENAPI;
pub use config::{AdminConfig, DEFAULT_SECTION};
pub use events::{snapshot, Snapshot};
pub use server::{AdminServer, ExtraRoutes};
pub use state::{
    AdminState, ComponentState, ComponentStatus, Components, Endpoint, FeedFields, NodeInfo,
};
