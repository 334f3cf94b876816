//! Apache Kafka on rdkafka (librdkafka).
//!
//! One topic per cell with one partition (replication 1), `max.message.bytes` raised to
//! 16 MiB so the 1 MiB cells are accepted (Kafka's default rejects them). Producer:
//! `acks=1` when volatile, `acks=all` when persistent; `linger.ms=0` (librdkafka still
//! batches whatever queues up while a request is in flight); deliveries are awaited at each
//! flush when persistent and at close otherwise. Consumer: a partition assignment (no group
//! rebalance), from the end (live) or the beginning (replay), no commits.

use std::collections::VecDeque;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use crate::clock::now_ns;
use crate::driver::{
    Driver, DriverError, DriverResult, Durability, Publisher, Received, Subscriber,
};

const MAX_MESSAGE: &str = "16777216";

/// Apache Kafka.
pub struct KafkaDriver {
    bootstrap: String,
    durability: Durability,
}

impl KafkaDriver {
    /// A driver for the broker at `addr`.
    pub fn new(addr: &str, durability: Durability) -> Self {
        Self {
            bootstrap: addr.into(),
            durability,
        }
    }

    fn config(&self) -> ClientConfig {
        let mut c = ClientConfig::new();
        // Nagle off, as the broker has it: small requests go out at once.
        c.set("bootstrap.servers", &self.bootstrap)
            .set("socket.nagle.disable", "true");
        c
    }

    fn consumer(&self, topic: &str, offset: Offset) -> DriverResult<Box<dyn Subscriber>> {
        let group = format!("fb-{}-{}", std::process::id(), fastrand::u64(..));
        let c: StreamConsumer = self
            .config()
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .set("fetch.max.bytes", "52428800")
            .set("max.partition.fetch.bytes", MAX_MESSAGE)
            .set("receive.message.max.bytes", "104857600")
            .create()
            .map_err(|e| DriverError::connect("kafka", e))?;
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, 0, offset)
            .map_err(|e| DriverError::connect("kafka", e))?;
        c.assign(&tpl)
            .map_err(|e| DriverError::connect("kafka", e))?;
        Ok(Box::new(KafkaSub(c)))
    }
}

struct KafkaPub {
    producer: FutureProducer,
    topic: String,
    pending: VecDeque<DeliveryFuture>,
    wait_each_flush: bool,
}

impl KafkaPub {
    async fn drain(&mut self) -> DriverResult<()> {
        while let Some(f) = self.pending.pop_front() {
            match f.await {
                Ok(Ok(_)) => {}
                Ok(Err((e, _))) => return Err(DriverError::io("kafka", e)),
                Err(_) => return Err(DriverError::io("kafka", "delivery report lost")),
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Publisher for KafkaPub {
    async fn send(&mut self, payload: Bytes) -> DriverResult<()> {
        loop {
            let rec = FutureRecord::<(), [u8]>::to(&self.topic).payload(&payload[..]);
            match self.producer.send_result(rec) {
                Ok(f) => {
                    self.pending.push_back(f);
                    return Ok(());
                }
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                    // librdkafka's queue is full: wait for deliveries, as a blocking send would.
                    if let Some(f) = self.pending.pop_front() {
                        let _ = f.await;
                    } else {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                }
                Err((e, _)) => return Err(DriverError::io("kafka", e)),
            }
        }
    }

    async fn flush(&mut self) -> DriverResult<()> {
        if self.wait_each_flush || self.pending.len() > 100_000 {
            self.drain().await?;
        }
        Ok(())
    }

    async fn close(&mut self) -> DriverResult<()> {
        self.drain().await
    }
}

struct KafkaSub(StreamConsumer);

#[async_trait]
impl Subscriber for KafkaSub {
    async fn recv(&mut self) -> DriverResult<Option<Received>> {
        let m = self
            .0
            .recv()
            .await
            .map_err(|e| DriverError::io("kafka", e))?;
        // Timed before the copy out of librdkafka's buffer.
        let at_ns = now_ns();
        Ok(Some(Received {
            payload: Bytes::copy_from_slice(m.payload().unwrap_or_default()),
            at_ns,
        }))
    }
}

#[async_trait]
impl Driver for KafkaDriver {
    fn name(&self) -> &'static str {
        "kafka"
    }

    async fn prepare(&self, topic: &str, _max_message: usize) -> DriverResult<()> {
        let admin: AdminClient<DefaultClientContext> = self
            .config()
            .create()
            .map_err(|e| DriverError::connect("kafka", e))?;
        let t = NewTopic::new(topic, 1, TopicReplication::Fixed(1))
            .set("max.message.bytes", MAX_MESSAGE);
        let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
        // A broker that just opened its port may not have a controller yet: retry briefly.
        let mut last = String::new();
        for _ in 0..60 {
            match admin.create_topics([&t], &opts).await {
                Ok(rs) => match rs.into_iter().next() {
                    Some(Ok(_)) | Some(Err((_, RDKafkaErrorCode::TopicAlreadyExists))) => {
                        return Ok(())
                    }
                    Some(Err((_, code))) => last = code.to_string(),
                    None => last = "no result".into(),
                },
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Err(DriverError::connect(
            "kafka",
            format!("creating topic {topic}: {last}"),
        ))
    }

    async fn publisher(&self, topic: &str) -> DriverResult<Box<dyn Publisher>> {
        let acks = match self.durability {
            Durability::Volatile => "1",
            Durability::Persistent => "all",
        };
        let producer: FutureProducer = self
            .config()
            .set("acks", acks)
            .set("linger.ms", "0")
            .set("message.max.bytes", MAX_MESSAGE)
            .set("queue.buffering.max.messages", "1000000")
            .set("queue.buffering.max.kbytes", "1048576")
            .create()
            .map_err(|e| DriverError::connect("kafka", e))?;
        Ok(Box::new(KafkaPub {
            producer,
            topic: topic.into(),
            pending: VecDeque::new(),
            wait_each_flush: self.durability == Durability::Persistent,
        }))
    }

    async fn subscriber(&self, topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        self.consumer(topic, Offset::End)
    }

    async fn replayer(&self, topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        self.consumer(topic, Offset::Beginning)
    }
}
