//! fogline's node: composes the configuration from each component's section, opens the
//! broker, starts the components in order (the native protocol, MQTT, the admin API), gives
//! each one stop signal and waits for it, and reports every component's health.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let node = fogline_node::Node::start(fogline_node::Config::default()).await?;
//! println!("native protocol on {:?}", node.address("native"));
//! node.run(async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(()) }
//! ```
//!
//! - `config`: [`Config`], one section per component, and the documented default file.
//! - `component`: what a component is ([`Component`], [`Context`], [`Started`]).
//! - `components/`: one folder per component.
//! - `node`: [`Node`], start order, stop order, failures. `health`: the components' states.
//! - `memory`: the task that hands freed heap memory back to the system after connections
//!   end.
#![deny(missing_docs)]

mod component;
mod components;
mod config;
mod health;
mod intake_metrics;
mod memory;
mod node;

pub use component::{BoxError, BoxFuture, Component, Context, StartFn, Started};
pub use config::{default_file, Config, ConfigError, NodeSection};
pub use health::Board;
pub use node::{Node, NodeError};
