//! `[[bridge.mqtt]]`: a connection to another MQTT broker with Mosquitto's bridge semantics
//! (topic lines `in`/`out`/`both`, QoS, local and remote prefixes: `topic`), over MQTT 5.0.
//!
//! - Out: the records of the bridge's stream that a line carries out are published to the
//!   remote broker; the saved position moves only past records the remote acknowledged
//!   (`window`), so what waits for the link waits in the stream, across kill -9 too. QoS 1
//!   records after the position are sent again after a reconnect or a restart, and may
//!   arrive twice: `duplicates` counts them.
//! - In: messages of the remote subscriptions are stored here (acknowledged publish) before
//!   the remote gets their PUBACK, with their origin in the [`ORIGIN`] header (`convert`).
//! - No loops: records whose [`ORIGIN`] is this bridge never go out, and the remote
//!   subscriptions are no-local, so the remote does not send back what the bridge published.
//!
//! QoS 2 is carried as QoS 1 both ways: exactly once would need the packet ids of a
//! session kept across restarts, and the stream is what the bridge keeps.

pub mod bridge;
pub mod convert;
pub mod tls;
pub mod topic;
pub mod window;

/// Header naming the bridge a record came in through.
pub const ORIGIN: &str = "fogline-bridge";
