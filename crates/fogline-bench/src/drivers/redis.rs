//! Redis pub/sub on the `redis` crate.
//!
//! Producers pipeline their PUBLISH commands: everything sent since the last flush goes out as
//! one pipeline (a burst of up to 64 at maximum rate, one message at a fixed rate). Redis
//! disconnects a subscriber whose output buffer passes `client-output-buffer-limit pubsub`
//! (default 32 MB hard, 8 MB for 60 s): that ends the subscription and counts as loss.

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;

use crate::clock::now_ns;
use crate::driver::{Driver, DriverError, DriverResult, Publisher, Received, Subscriber};

/// Redis pub/sub.
pub struct RedisDriver {
    client: redis::Client,
}

impl RedisDriver {
    /// A driver for the server at `addr`.
    ///
    /// # Errors
    /// When `addr` does not form a valid Redis URL.
    pub fn new(addr: &str) -> DriverResult<Self> {
        let client = redis::Client::open(format!("redis://{addr}/"))
            .map_err(|e| DriverError::connect("redis", e))?;
        Ok(Self { client })
    }
}

struct RedisPub {
    conn: redis::aio::MultiplexedConnection,
    topic: String,
    buffered: Vec<Bytes>,
}

#[async_trait]
impl Publisher for RedisPub {
    async fn send(&mut self, payload: Bytes) -> DriverResult<()> {
        self.buffered.push(payload);
        Ok(())
    }

    async fn flush(&mut self) -> DriverResult<()> {
        if self.buffered.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for m in self.buffered.drain(..) {
            pipe.cmd("PUBLISH").arg(&self.topic).arg(&m[..]).ignore();
        }
        pipe.query_async::<()>(&mut self.conn)
            .await
            .map_err(|e| DriverError::io("redis", e))
    }
}

struct RedisSub(redis::aio::PubSubStream);

#[async_trait]
impl Subscriber for RedisSub {
    async fn recv(&mut self) -> DriverResult<Option<Received>> {
        Ok(self.0.next().await.map(|m| {
            // Timed before the copy out of the client's message.
            let at_ns = now_ns();
            Received {
                payload: Bytes::copy_from_slice(m.get_payload_bytes()),
                at_ns,
            }
        }))
    }
}

#[async_trait]
impl Driver for RedisDriver {
    fn name(&self) -> &'static str {
        "redis"
    }

    async fn publisher(&self, topic: &str) -> DriverResult<Box<dyn Publisher>> {
        let conn = self
            .client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| DriverError::connect("redis", e))?;
        Ok(Box::new(RedisPub {
            conn,
            topic: topic.into(),
            buffered: Vec::new(),
        }))
    }

    async fn subscriber(&self, topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        let mut ps = self
            .client
            .get_async_pubsub()
            .await
            .map_err(|e| DriverError::connect("redis", e))?;
        // Returns after the server confirmed the subscription.
        ps.subscribe(topic)
            .await
            .map_err(|e| DriverError::connect("redis", e))?;
        Ok(Box::new(RedisSub(ps.into_on_message())))
    }
}
