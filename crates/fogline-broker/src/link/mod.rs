//! The in-process link: how a component inside the node (a rule, a bridge, the `$SYS`
//! publisher, a monitor) publishes, subscribes and consumes, with the same semantics as a
//! remote client and no socket or encoding in between.
//!
//! - [`Link::publish`] is fire-and-forget (a native publish with request id 0, MQTT QoS 0):
//!   live subscribers get the records before they are stored, and a failure is only
//!   reported, never retried. [`Link::publish_acked`] returns once the records are as
//!   durable as their streams promise (a `PubAck`): stored under `mmap`, synced under
//!   `fsync`; on an error nothing was delivered and a retry duplicates nothing.
//! - [`Link::subscribe`] is a live subscription with the broker's bounded queue, its
//!   slow-consumer policy (`block` holds publishers back, `drop-oldest` counts what it drops,
//!   `disconnect` closes the subscription) and its priority lane.
//! - [`Link::consumer`] opens a durable (or ephemeral) consumer on a stream: fetch with a
//!   wait, ack, redelivery after the ack timeout, the position kept across restarts.
//!
//! Records travel as the broker's [`Batch`]es: the publisher's record block, shared by
//! reference count with every subscriber (no copy per subscriber). A link is a client of the
//! node like any other: it is listed among the connections (protocol `link`, its name as the
//! client name), and its records count in the metrics.

mod consumer;
mod subscription;

use std::sync::Arc;

use fogline_wire::{HeadersBuilder, RecordBlock};

use crate::batch::{now_micros, Batch};
use crate::broker::Broker;
use crate::clients::{ClientHandle, Protocol};
use crate::consumer::ConsumerOptions;
use crate::direct::Handoff;
use crate::error::BrokerError;

pub use consumer::LinkConsumer;
pub use subscription::{LinkSubscription, Message};

/// How a batch is published over the link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PublishOptions {
    /// Wait until stored (as a `PubAck` does); otherwise fire-and-forget.
    pub acked: bool,
    /// Overtake bulk traffic on every queue.
    pub priority: bool,
}

/// One component's connection to the broker. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct Link {
    broker: Broker,
    client: Arc<ClientHandle>,
}

impl Broker {
    /// A link for the component `name` (its client name in the connection list).
    pub fn link(&self, name: &str) -> Link {
        let client = self.register_client(Protocol::Link, name);
        client.set_name(name);
        Link {
            broker: self.clone(),
            client: Arc::new(client),
        }
    }
}

impl Link {
    /// The broker it is linked to.
    pub fn broker(&self) -> &Broker {
        &self.broker
    }

    /// The origin its publishes carry (for no-local subscriptions).
    pub fn origin(&self) -> u64 {
        self.client.id()
    }

    /// Publishes one record, fire-and-forget.
    ///
    /// # Errors
    /// An invalid topic or an oversize record; a storage failure, which live subscribers
    /// may not notice (they can have had the record already).
    pub async fn publish(&self, topic: &str, payload: impl AsRef<[u8]>) -> Result<(), BrokerError> {
        let block = single(&[], payload.as_ref())?;
        self.publish_block(topic, block, PublishOptions::default())
            .await
    }

    /// Publishes one record and returns once it is stored.
    ///
    /// # Errors
    /// As [`Link::publish`]; on an error nothing was stored or delivered.
    pub async fn publish_acked(
        &self,
        topic: &str,
        payload: impl AsRef<[u8]>,
    ) -> Result<(), BrokerError> {
        let block = single(&[], payload.as_ref())?;
        let opts = PublishOptions {
            acked: true,
            ..PublishOptions::default()
        };
        self.publish_block(topic, block, opts).await
    }

    /// Publishes one record with headers (attribute, value).
    ///
    /// # Errors
    /// As [`Link::publish`], and headers that do not fit their length fields.
    pub async fn publish_with(
        &self,
        topic: &str,
        headers: &[(&str, &[u8])],
        payload: impl AsRef<[u8]>,
        opts: PublishOptions,
    ) -> Result<(), BrokerError> {
        let block = headers
            .iter()
            .fold(HeadersBuilder::new(), |b, (k, v)| b.add(k, v))
            .finish()
            .map_err(|e| BrokerError::Invalid(format!("headers: {e}")))?;
        let block = single(&block, payload.as_ref())?;
        self.publish_block(topic, block, opts).await
    }

    /// Publishes a block of records on one topic (zero-copy: the block is what subscribers
    /// and streams receive).
    ///
    /// # Errors
    /// As [`Link::publish`] or [`Link::publish_acked`].
    pub async fn publish_block(
        &self,
        topic: &str,
        records: RecordBlock,
        opts: PublishOptions,
    ) -> Result<(), BrokerError> {
        fogline_wire::validate_topic(topic)
            .map_err(|e| BrokerError::InvalidTopic(format!("topic {topic:?}: {e}")))?;
        let batch = Batch {
            topic: topic.into(),
            records,
            timestamp: now_micros(),
            priority: opts.priority,
            origin: self.client.id(),
        };
        let (count, weight) = (u64::from(batch.count()), batch.weight() as u64);
        let result = if opts.acked {
            self.broker.publish(batch, Handoff::Direct).await
        } else {
            self.broker.publish_unacked(batch, Handoff::Direct).await
        };
        if result.is_ok() {
            self.client.count_in(count, weight);
        }
        result
    }

    /// Subscribes to `filter` (see [`LinkSubscription`]).
    ///
    /// # Errors
    /// A malformed filter.
    pub fn subscribe(
        &self,
        filter: &str,
        opts: crate::SubscribeOptions,
    ) -> Result<LinkSubscription, BrokerError> {
        LinkSubscription::new(self, filter, opts)
    }

    /// Opens a consumer on `stream` (see [`LinkConsumer`]).
    ///
    /// # Errors
    /// Unknown stream, malformed filter, a durable name already open or not allowed.
    pub fn consumer(
        &self,
        stream: &str,
        opts: ConsumerOptions,
    ) -> Result<LinkConsumer, BrokerError> {
        let consumer = self.broker.open_consumer(stream, opts)?;
        Ok(LinkConsumer::new(consumer, self.client.clone()))
    }
}

fn single(headers: &[u8], payload: &[u8]) -> Result<RecordBlock, BrokerError> {
    RecordBlock::single(0, headers, payload)
        .map_err(|e| BrokerError::Invalid(format!("record: {e}")))
}
