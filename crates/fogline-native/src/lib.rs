//! fogline's native protocol front end: the listeners (TCP and Unix sockets, on the
//! transport layer of `fogline-net`) and the connections that speak the protocol of
//! `fogline-wire` (see its `PROTOCOL.md`) to the broker.
//!
//! ```no_run
//! # async fn demo(broker: fogline_broker::Broker) -> Result<(), Box<dyn std::error::Error>> {
//! let server = fogline_native::NativeServer::bind(Default::default(), broker).await?;
//! println!("listening on {:?}", server.local_addrs());
//! let (_stop, stopped) = tokio::sync::watch::channel(false);
//! server.run(stopped).await;
//! # Ok(()) }
//! ```
//!
//! - `connection`: one connection's reader and writer tasks; `acks` the answers to acked
//!   publishes that wait for durability; `direct` deliveries written on a publisher's task;
//!   `consumers` durable consumers; `admin` the management requests (streams, consumers);
//!   `announce` notify_interest (announcements and their notices); `query` the store.
#![deny(missing_docs)]

mod acks;
mod admin;
mod announce;
mod config;
mod connection;
mod consumers;
mod direct;
mod errors;
mod listener;
mod login;
mod outbuf;
mod query;

pub use config::{NativeConfig, DEFAULT_SECTION};
pub use errors::broker_code;
pub use listener::NativeServer;
