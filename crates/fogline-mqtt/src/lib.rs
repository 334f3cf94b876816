//! fogline's MQTT front end: MQTT 3.1.1 and 5.0 sessions mapped onto the
//! broker, so MQTT clients and native clients share one routing world.
//!
//! - [`codec`]: the packet codec (pure, fuzzed; one file per packet family).
//! - `message`: application messages and their mapping to broker records
//!   and headers (the header keys are in [`message::key`]).
//! - `session` / `shared`: sessions (subscriptions, inflight and queued
//!   messages), take-over, wills, expiry, retained messages.
//! - [`store`]: the journal that keeps retained messages and persistent
//!   sessions across restarts (`mmap`/`fsync` storage).
//! - `connection`: one task per connection: handshake, inbound packets,
//!   outbound flow within the client's receive maximum, keep-alive.
//! - `profile`: Associative Rendezvous over MQTT: interests on SUBSCRIBE, producers
//!   announced on `$fogline/announce/<topic>` and told on `$fogline/notify/<topic>`.
//! - `ws`: MQTT over WebSocket (subprotocol `mqtt`).
//! - `sys`: Mosquitto's `$SYS/broker/...` topics, published over the in-process link.
//! - [`MqttServer`]: the listeners (on the transport layer of `fogline-net`).
//!
//! The specification conformance table is `CONFORMANCE.md` in this crate.
#![deny(missing_docs)]

pub mod codec;
mod config;
mod connection;
mod direct;
mod listener;
pub mod message;
#[cfg(test)]
mod persist_tests;
mod profile;
mod retain;
mod session;
mod shared;
pub mod store;
mod sys;
mod ws;

pub use config::{MqttConfig, DEFAULT_SECTION};
pub use fogline_auth::{AllowAll, Authenticator, Login, Refused, Users};
pub use listener::{MqttError, MqttServer, MqttStats, SessionCounts};
