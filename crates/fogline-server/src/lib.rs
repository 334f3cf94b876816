//! A fogline node: the configuration file, the broker, and the native-protocol
//! listeners (TCP and Unix sockets) that serve it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let server = fogline_server::Server::bind(fogline_server::Config::default()).await?;
//! println!("listening on {:?}", server.local_addrs());
//! server.run(std::future::pending()).await;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod acks;
mod config;
mod connection;
mod consumers;
mod direct;
mod errors;
mod listener;
mod outbuf;
pub mod streams;

pub use config::{Config, ConfigError, ServerConfig, DEFAULT_CONFIG};
pub use listener::{Server, ServerError};
