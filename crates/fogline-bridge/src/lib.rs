//! fogline's bridges: records carried between a node's streams and other systems, through
//! the log, so that what waits for a link that is down waits in its stream, bounded by the
//! stream's retention.
//!
//! - `config`: the `[bridge]` section (`[[bridge.kafka]]`, `[[bridge.mqtt]]`; `config_in`:
//!   `[[bridge.kafka_in]]`).
//! - `kafka`: a stream forwarded to Apache Kafka, each record once and in order across
//!   restarts and outages (`kafka::out`), resumed from what Kafka holds (`kafka::tail`);
//!   Kafka topics consumed into fogline at least once (`kafka::inbound`), resumed from what
//!   the streams hold (`kafka::resume`), with the group's offsets in Kafka (`kafka::group`).
//! - `mqtt`: to and from another MQTT broker with Mosquitto's bridge semantics, store and
//!   forward through the stream, no loops (`mqtt::bridge`, topic lines in `mqtt::topic`).
//! - `status`: each bridge's state, counts and lag; `api` serves them at
//!   `/api/v1/bridges`, `metrics` in `/metrics`, `feed` in the dashboard's live feed.
//! - `position`: a bridge's saved place in its stream; `stream`: its lag there, and what
//!   retention dropped before it was carried.
//!
//! The design and its guarantees: `docs/BRIDGES.md`.
#![deny(missing_docs)]

pub mod api;
pub mod config;
pub mod config_in;
pub mod dial;
pub mod feed;
pub mod kafka;
pub mod metrics;
pub mod mqtt;
pub mod position;
pub mod status;
mod stream;

pub use config::{BridgeConfig, KafkaOutConfig, MqttConfig};
pub use config_in::KafkaInConfig;
pub use status::{BridgeStatus, Bridges, Kind, Snapshot, State};
