//! NATS core pub/sub and JetStream, on async-nats.
//!
//! Core: at-most-once; the client's subscription buffer is async-nats's default (65,536
//! messages) and the server cuts off a consumer more than 64 MiB behind: both show as loss.
//! JetStream: one stream per topic (memory storage when volatile, file when persistent);
//! producers publish through JetStream and await the acks at each flush when persistent (at
//! close, or past 4,096 outstanding, when volatile); subscribers are
//! ephemeral pull consumers without acks (deliver new; replay: deliver all).

use std::collections::VecDeque;

use async_nats::jetstream::{self, consumer, stream};
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;

use crate::driver::{
    Driver, DriverError, DriverResult, Durability, Publisher, Received, Subscriber,
};

async fn connect(name: &'static str, addr: &str) -> DriverResult<async_nats::Client> {
    async_nats::ConnectOptions::new()
        .connect(addr)
        .await
        .map_err(|e| DriverError::connect(name, e))
}

/// NATS core.
pub struct NatsDriver {
    addr: String,
}

impl NatsDriver {
    /// A driver for the server at `addr`.
    pub fn new(addr: &str) -> Self {
        Self { addr: addr.into() }
    }
}

struct CorePub(async_nats::Client, String);

#[async_trait]
impl Publisher for CorePub {
    async fn send(&mut self, payload: Bytes) -> DriverResult<()> {
        self.0
            .publish(self.1.clone(), payload)
            .await
            .map_err(|e| DriverError::io("nats", e))
    }

    async fn flush(&mut self) -> DriverResult<()> {
        // The client's connection task writes queued messages at once; a PING round trip
        // per burst would only slow the producer down.
        Ok(())
    }

    async fn close(&mut self) -> DriverResult<()> {
        self.0.flush().await.map_err(|e| DriverError::io("nats", e))
    }
}

struct CoreSub(async_nats::Subscriber);

#[async_trait]
impl Subscriber for CoreSub {
    async fn recv(&mut self) -> DriverResult<Option<Received>> {
        Ok(self.0.next().await.map(|m| Received::now(m.payload)))
    }
}

#[async_trait]
impl Driver for NatsDriver {
    fn name(&self) -> &'static str {
        "nats"
    }

    async fn publisher(&self, topic: &str) -> DriverResult<Box<dyn Publisher>> {
        Ok(Box::new(CorePub(
            connect("nats", &self.addr).await?,
            topic.into(),
        )))
    }

    async fn subscriber(&self, topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        let c = connect("nats", &self.addr).await?;
        let s = c
            .subscribe(topic.to_string())
            .await
            .map_err(|e| DriverError::connect("nats", e))?;
        // The SUB reaches the server before this returns.
        c.flush()
            .await
            .map_err(|e| DriverError::connect("nats", e))?;
        Ok(Box::new(CoreSub(s)))
    }
}

/// NATS JetStream.
pub struct JetStreamDriver {
    addr: String,
    durability: Durability,
}

impl JetStreamDriver {
    /// A driver for the server at `addr`; streams in memory or in files.
    pub fn new(addr: &str, durability: Durability) -> Self {
        Self {
            addr: addr.into(),
            durability,
        }
    }

    async fn context(&self) -> DriverResult<jetstream::Context> {
        Ok(jetstream::new(connect("jetstream", &self.addr).await?))
    }

    async fn consumer(
        &self,
        topic: &str,
        deliver: consumer::DeliverPolicy,
    ) -> DriverResult<Box<dyn Subscriber>> {
        let js = self.context().await?;
        let s = js
            .get_stream(stream_name(topic))
            .await
            .map_err(|e| DriverError::connect("jetstream", e))?;
        let c: consumer::PullConsumer = s
            .create_consumer(consumer::pull::Config {
                deliver_policy: deliver,
                ack_policy: consumer::AckPolicy::None,
                ..Default::default()
            })
            .await
            .map_err(|e| DriverError::connect("jetstream", e))?;
        let m = c
            .messages()
            .await
            .map_err(|e| DriverError::connect("jetstream", e))?;
        Ok(Box::new(JsSub(m)))
    }
}

fn stream_name(topic: &str) -> String {
    topic.replace(['.', '*', '>'], "_")
}

struct JsPub {
    js: jetstream::Context,
    topic: String,
    pending: VecDeque<jetstream::context::PublishAckFuture>,
    /// Persistent: every flush waits for the acks; volatile: only close does (and a flush
    /// past `MAX_PENDING` outstanding acks).
    wait_each_flush: bool,
}

const MAX_PENDING: usize = 4096;

impl JsPub {
    async fn drain(&mut self) -> DriverResult<()> {
        while let Some(ack) = self.pending.pop_front() {
            ack.await.map_err(|e| DriverError::io("jetstream", e))?;
        }
        Ok(())
    }
}

#[async_trait]
impl Publisher for JsPub {
    async fn send(&mut self, payload: Bytes) -> DriverResult<()> {
        let ack = self
            .js
            .publish(self.topic.clone(), payload)
            .await
            .map_err(|e| DriverError::io("jetstream", e))?;
        self.pending.push_back(ack);
        Ok(())
    }

    async fn flush(&mut self) -> DriverResult<()> {
        if self.wait_each_flush || self.pending.len() > MAX_PENDING {
            self.drain().await?;
        }
        Ok(())
    }

    async fn close(&mut self) -> DriverResult<()> {
        self.drain().await
    }
}

struct JsSub(consumer::pull::Stream);

#[async_trait]
impl Subscriber for JsSub {
    async fn recv(&mut self) -> DriverResult<Option<Received>> {
        match self.0.next().await {
            Some(Ok(m)) => Ok(Some(Received::now(m.message.payload))),
            Some(Err(e)) => Err(DriverError::io("jetstream", e)),
            None => Ok(None),
        }
    }
}

#[async_trait]
impl Driver for JetStreamDriver {
    fn name(&self) -> &'static str {
        "jetstream"
    }

    async fn prepare(&self, topic: &str, max_message: usize) -> DriverResult<()> {
        let js = self.context().await?;
        let storage = match self.durability {
            Durability::Volatile => stream::StorageType::Memory,
            Durability::Persistent => stream::StorageType::File,
        };
        js.get_or_create_stream(stream::Config {
            name: stream_name(topic),
            subjects: vec![topic.to_string()],
            storage,
            max_message_size: i32::try_from(max_message + 4096).unwrap_or(i32::MAX),
            ..Default::default()
        })
        .await
        .map_err(|e| DriverError::connect("jetstream", e))?;
        Ok(())
    }

    async fn publisher(&self, topic: &str) -> DriverResult<Box<dyn Publisher>> {
        Ok(Box::new(JsPub {
            js: self.context().await?,
            topic: topic.into(),
            pending: VecDeque::new(),
            wait_each_flush: self.durability == Durability::Persistent,
        }))
    }

    async fn subscriber(&self, topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        self.consumer(topic, consumer::DeliverPolicy::New).await
    }

    async fn replayer(&self, topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        self.consumer(topic, consumer::DeliverPolicy::All).await
    }
}
