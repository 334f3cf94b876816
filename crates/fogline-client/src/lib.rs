//! Async Rust client for fogline's native protocol (tokio).
//!
//! One [`Client`] is one connection, served by a reader task and a writer
//! task; requests are matched to answers by id. Modules:
//! - `client`: connecting, `flush`, `ping`, `streams`, `close`.
//! - `manage`: creating, changing, purging and deleting streams; listing and deleting
//!   durable consumers.
//! - `publish`: fire-and-forget, acked and tracked publishing (batched).
//! - `subscription`: live subscriptions ([`Subscription`]).
//! - `consumer`: stream consumers with fetch/push, acks ([`Consumer`]).
//! - `outbox`: the bounded publish buffer the records are encoded into.
//! - `conn`, `reader`, `writer`: the connection tasks, reconnect.
//! - `transport`, `pump`: addresses, sockets, and TLS (`ClientOptions::tls`).
//!
//! Delivery guarantees: `publish` is at most once (records buffered while
//! reconnecting are sent after, but a write cut by a dropped connection is
//! lost); `publish_acked` is at least once when the caller retries on
//! `Disconnected`; subscriptions are at most once; consumers at least once.
//! Order: records of one topic and one priority reach the server in the
//! order they were published, whichever way each was published (high
//! priority ones go ahead of the rest). A lost connection that cuts an
//! acked publish fails every acked publish still buffered as well, so a
//! caller that, at the first `Disconnected`, publishes the failed records
//! again, in order, before any newer one keeps the order of its acked
//! records. (Records it queued after the loss and before it saw the failure,
//! and fire-and-forget records buffered meanwhile, go out on the new
//! connection ahead of the retried ones.)
//!
//! TLS (`ClientOptions::tls`) verifies the server against a CA file and may present a
//! client certificate; `ClientOptions::username`/`password` go in Hello. Every reconnect
//! runs the TLS handshake and sends the credentials again; a refused login
//! (`BadCredentials`) ends the client instead of being retried.
//!
//! Reconnect is on by default (`ClientOptions::reconnect`): after a lost
//! connection the client reconnects with backoff, re-subscribes and
//! re-opens consumers; meanwhile publishes buffer (up to the bound) and
//! requests fail fast with `Disconnected`. Keepalive pings (every 30 s by
//! default) notice a server or link that went silent.
#![deny(missing_docs)]

mod announce;
mod client;
mod conn;
mod consumer;
mod error;
mod manage;
mod options;
mod outbox;
mod publish;
#[cfg(unix)]
mod pump;
mod query;
mod reader;
mod shared;
mod subscription;
mod transport;
mod writer;

pub use announce::Announcement;
pub use client::Client;
pub use consumer::Consumer;
pub use error::ClientError;
pub use fogline_net::tls::ClientTls;
pub use fogline_wire::{
    ConsumerDetail, ErrorCode, Headers, HeadersBuilder, StartPosition, Storage, StreamDetail,
    StreamInfo, StreamSpec, NODE_DEFAULT,
};
pub use manage::StreamUpdate;
pub use options::{
    ClientOptions, ConsumerOptions, Message, PublishRecord, Reconnect, StoredMessage,
    SubscribeOptions,
};
pub use publish::AckFuture;
pub use query::{StorePage, StoreQuery};
pub use subscription::Subscription;

#[cfg(test)]
mod tests {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}

    #[test]
    fn handles_cross_tasks() {
        send_sync::<crate::Client>();
        send::<crate::Subscription>();
        send::<crate::Consumer>();
        send::<crate::AckFuture>();
        send_sync::<crate::ClientError>();
    }
}
