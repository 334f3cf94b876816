//! fogline's broker core: streams, topic routing, live subscriptions and
//! durable consumers, independent of any transport.
//!
//! - [`Broker`] routes published [`Batch`]es to the [`Stream`]s that capture
//!   their topic and to the queues of matching [`Subscription`]s.
//! - [`queue`] holds each subscription's bounded queue with its priority lane
//!   and slow-consumer policy.
//! - [`Consumer`] is a cursor on a stream with acks and redelivery.
//! - [`trie`] indexes subscription filters.
//! - [`direct`] lets a publisher's task write to an idle subscriber's socket.
//! - [`link`] is the in-process link: components inside the node publish, subscribe and
//!   consume with a remote client's semantics, without sockets.
//! - `manage` creates, changes, purges and deletes streams at runtime (kept in the
//!   node's catalog, `catalog`), and lists and deletes consumers.
//! - `profiled` routes by content (subscriptions with an interest profile) and tells
//!   announced producers when somebody is interested ([`Broker::announce`]).
//! - [`guard`] holds the node's users and access control list and checks every
//!   connection's operations against them.
//! - [`clients`] is the node's list of connections with their traffic; [`stats`] the
//!   broker's counters.
//!
//! The native front end (`fogline-native`), the MQTT front end and the in-process link all
//! drive this API; none has routing of its own.
#![deny(missing_docs)]

mod acks;
mod batch;
mod broker;
mod catalog;
pub mod clients;
pub mod config;
mod consumer;
pub mod direct;
mod error;
pub mod guard;
pub mod link;
mod manage;
mod positions;
mod profiled;
mod queries;
pub mod queue;
pub mod stats;
mod stream;
mod tail;
pub mod trie;

pub use acks::AckQueue;
pub use batch::{now_micros, Batch};
pub use broker::{Broker, Stored, SubscribeOptions, Subscription};
pub use clients::{ClientHandle, ClientInfo, Protocol, TrafficSnapshot};
pub use config::{
    valid_consumer_name, BrokerConfig, QueueConfig, SlowConsumerPolicy, StorageMode, StreamConfig,
};
pub use consumer::{Consumer, ConsumerOptions, Delivery, Opener, Start, RULE_CONSUMER_PREFIX};
pub use direct::{DirectSink, DirectSocket, Handoff, PeekRead, SharedWrite, WriteHalf, Written};
pub use error::BrokerError;
pub use fogline_log::{RecoveryReport, Repair};
pub use guard::{AuthConfig, ClientGuard, Denied, Guard, GuardError, GuardStats};
pub use manage::{StreamChange, SubscriptionInfo};
pub use profiled::{Announcement, ProducerInfo};
pub use queries::{DeleteFuture, QueryFuture, StorePage, StoreQueries, StoreQuery};
pub use stats::{BrokerStats, DropReason};
pub use stream::{ConsumerInfo, HoldInfo, HolderInfo, RetentionHold, Stream};
