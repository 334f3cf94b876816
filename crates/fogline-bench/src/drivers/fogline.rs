//! fogline's native protocol, on fogline-client.
//!
//! Each publisher and subscriber is its own client connection (no reconnect: a lost link is
//! an error, counted as loss). Volatile: fire-and-forget `publish` (the client's writer sends
//! at once; nothing is held back, so `flush` only matters at close); persistent: pipelined
//! `publish_tracked` (acked batches without a future per record), and `flush` waits for
//! every ack. Subscribers are live subscriptions; replay is an
//! ephemeral push consumer on the server's `default` stream (which captures every topic when
//! no streams are configured) filtered to the topic, from the earliest record, no acks.

use async_trait::async_trait;
use bytes::Bytes;
use fogline_client::{
    Client, ClientOptions, Consumer, ConsumerOptions, PublishRecord, StartPosition,
    SubscribeOptions, Subscription,
};

use crate::driver::{
    Driver, DriverError, DriverResult, Durability, Publisher, Received, Subscriber,
};

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
    /// The topic, and each message's payload in turn (no topic copy per message).
    rec: PublishRecord,
    acked: bool,
}

impl FogPub {
    /// Waits until everything was written and, when acked, acknowledged.
    async fn drain(&mut self) -> DriverResult<()> {
        self.client
            .flush()
            .await
            .map_err(|e| DriverError::io(NAME, e))
    }
}

#[async_trait]
impl Publisher for FogPub {
    async fn send(&mut self, payload: Bytes) -> DriverResult<()> {
        let sent = if self.acked {
            self.rec.payload = payload;
            self.client.publish_tracked(&self.rec).await
        } else {
            self.client.publish(&self.rec.topic, &payload).await
        };
        sent.map_err(|e| DriverError::io(NAME, e))
    }

    async fn flush(&mut self) -> DriverResult<()> {
        // Fire-and-forget: the writer sends at once; nothing to wait for before a pause.
        if self.acked {
            self.drain().await?;
        }
        Ok(())
    }

    async fn close(&mut self) -> DriverResult<()> {
        self.drain().await
    }
}

struct FogSub {
    _client: Client,
    sub: Subscription,
}

#[async_trait]
impl Subscriber for FogSub {
    async fn recv(&mut self) -> DriverResult<Option<Received>> {
        match self.sub.recv().await {
            Some(m) => Ok(Some(Received::now(m.payload))),
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
    async fn recv(&mut self) -> DriverResult<Option<Received>> {
        match self.consumer.recv().await {
            Ok(r) => Ok(Some(Received::now(r.payload))),
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
            rec: PublishRecord::new(topic, Bytes::new()),
            acked: self.durability == Durability::Persistent,
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
