//! fogline's native protocol, on fogline-client.
//!
//! Each publisher and subscriber is its own client connection (no reconnect: a lost link is
//! an error, counted as loss). Volatile: fire-and-forget `publish` (the client's writer sends
//! at once; nothing is held back, so `flush` only matters at close); persistent: pipelined
//! `send_acked`, awaited at each flush. Subscribers are live subscriptions; replay is an
//! ephemeral push consumer on the server's `default` stream (which captures every topic when
//! no streams are configured) filtered to the topic, from the earliest record, no acks.

use std::collections::VecDeque;

use async_trait::async_trait;
use bytes::Bytes;
use fogline_client::{
    AckFuture, Client, ClientOptions, Consumer, ConsumerOptions, PublishRecord, StartPosition,
    SubscribeOptions, Subscription,
};

use crate::driver::{Driver, DriverError, DriverResult, Durability, Publisher, Subscriber};

const NAME: &str = "fogline";
const DEFAULT_STREAM: &str = "default";

/// fogline, native protocol.
pub struct FoglineDriver {
    addr: String,
    durability: Durability,
}

impl FoglineDriver {
    /// A driver for the server at `addr`.
    pub fn new(addr: &str, durability: Durability) -> Self {
        Self {
            addr: addr.into(),
            durability,
        }
    }

    async fn client(&self) -> DriverResult<Client> {
        let opts = ClientOptions {
            client_name: "fogline-bench".into(),
            reconnect: None,
            ..ClientOptions::default()
        };
        Client::connect(&self.addr, opts)
            .await
            .map_err(|e| DriverError::connect(NAME, e))
    }
}

struct FogPub {
    client: Client,
    topic: String,
    acked: bool,
    pending: VecDeque<AckFuture>,
}

impl FogPub {
    async fn drain(&mut self) -> DriverResult<()> {
        while let Some(f) = self.pending.pop_front() {
            f.await.map_err(|e| DriverError::io(NAME, e))?;
        }
        Ok(())
    }
}

#[async_trait]
impl Publisher for FogPub {
    async fn send(&mut self, payload: Bytes) -> DriverResult<()> {
        if self.acked {
            let rec = PublishRecord::new(self.topic.clone(), payload);
            let f = self
                .client
                .send_acked(&rec)
                .await
                .map_err(|e| DriverError::io(NAME, e))?;
            self.pending.push_back(f);
            Ok(())
        } else {
            self.client
                .publish(&self.topic, &payload)
                .await
                .map_err(|e| DriverError::io(NAME, e))
        }
    }

    async fn flush(&mut self) -> DriverResult<()> {
        self.drain().await
    }

    async fn close(&mut self) -> DriverResult<()> {
        self.drain().await?;
        self.client
            .flush()
            .await
            .map_err(|e| DriverError::io(NAME, e))
    }
}

struct FogSub {
    _client: Client,
    sub: Subscription,
}

#[async_trait]
impl Subscriber for FogSub {
    async fn recv(&mut self) -> DriverResult<Option<Bytes>> {
        match self.sub.recv().await {
            Some(m) => Ok(Some(m.payload)),
            None => match self.sub.take_error() {
                Some(e) => Err(DriverError::io(NAME, e)),
                None => Ok(None),
            },
        }
    }
}

struct FogReplay {
    _client: Client,
    consumer: Consumer,
}

#[async_trait]
impl Subscriber for FogReplay {
    async fn recv(&mut self) -> DriverResult<Option<Bytes>> {
        match self.consumer.recv().await {
            Ok(r) => Ok(Some(r.payload)),
            Err(e) => Err(DriverError::io(NAME, e)),
        }
    }
}

#[async_trait]
impl Driver for FoglineDriver {
    fn name(&self) -> &'static str {
        NAME
    }

    async fn publisher(&self, topic: &str) -> DriverResult<Box<dyn Publisher>> {
        Ok(Box::new(FogPub {
            client: self.client().await?,
            topic: topic.into(),
            acked: self.durability == Durability::Persistent,
            pending: VecDeque::new(),
        }))
    }

    async fn subscriber(&self, topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        let client = self.client().await?;
        let sub = client
            .subscribe(topic, SubscribeOptions::default())
            .await
            .map_err(|e| DriverError::connect(NAME, e))?;
        Ok(Box::new(FogSub {
            _client: client,
            sub,
        }))
    }

    async fn replayer(&self, topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        let client = self.client().await?;
        let consumer = client
            .consumer(
                DEFAULT_STREAM,
                ConsumerOptions {
                    filter: topic.into(),
                    start: StartPosition::Earliest,
                    ack_timeout: None,
                    push_credit: 4096,
                    ..ConsumerOptions::default()
                },
            )
            .await
            .map_err(|e| DriverError::connect(NAME, e))?;
        Ok(Box::new(FogReplay {
            _client: client,
            consumer,
        }))
    }
}
