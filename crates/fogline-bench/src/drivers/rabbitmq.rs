//! RabbitMQ over AMQP 0-9-1, on lapin.
//!
//! Producers publish to the built-in topic exchange `amq.topic` with the topic as routing
//! key; each subscriber declares its own exclusive, auto-deleted queue bound to it and
//! consumes without acks (no prefetch limit). Persistent: publisher confirms (awaited at each
//! flush) and persistent delivery mode; queues stay non-durable (they live as long as the
//! subscriber's connection).

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::StreamExt;
use lapin::options::{
    BasicConsumeOptions, BasicPublishOptions, ConfirmSelectOptions, QueueBindOptions,
    QueueDeclareOptions,
};
use lapin::types::FieldTable;
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};

use crate::driver::{
    Driver, DriverError, DriverResult, Durability, Publisher, Received, Subscriber,
};

const EXCHANGE: &str = "amq.topic";

/// RabbitMQ.
pub struct RabbitDriver {
    uri: String,
    durability: Durability,
}

impl RabbitDriver {
    /// A driver for the broker at `addr`.
    pub fn new(addr: &str, durability: Durability) -> Self {
        Self {
            uri: format!("amqp://guest:guest@{addr}/%2f"),
            durability,
        }
    }

    async fn channel(&self) -> DriverResult<(Connection, Channel)> {
        let conn = Connection::connect(&self.uri, ConnectionProperties::default())
            .await
            .map_err(|e| DriverError::connect("rabbitmq", e))?;
        let ch = conn
            .create_channel()
            .await
            .map_err(|e| DriverError::connect("rabbitmq", e))?;
        Ok((conn, ch))
    }
}

struct RabbitPub {
    _conn: Connection,
    ch: Channel,
    topic: String,
    props: BasicProperties,
    confirms: bool,
}

#[async_trait]
impl Publisher for RabbitPub {
    async fn send(&mut self, payload: Bytes) -> DriverResult<()> {
        // Without confirm mode the returned confirmation resolves at once; with it,
        // `flush` waits for all of them together.
        self.ch
            .basic_publish(
                EXCHANGE.into(),
                self.topic.as_str().into(),
                BasicPublishOptions::default(),
                &payload,
                self.props.clone(),
            )
            .await
            .map_err(|e| DriverError::io("rabbitmq", e))?;
        Ok(())
    }

    async fn flush(&mut self) -> DriverResult<()> {
        if self.confirms {
            self.ch
                .wait_for_confirms()
                .await
                .map_err(|e| DriverError::io("rabbitmq", e))?;
        }
        Ok(())
    }
}

struct RabbitSub {
    _conn: Connection,
    consumer: lapin::Consumer,
}

#[async_trait]
impl Subscriber for RabbitSub {
    async fn recv(&mut self) -> DriverResult<Option<Received>> {
        match self.consumer.next().await {
            Some(Ok(d)) => Ok(Some(Received::now(Bytes::from(d.data)))),
            Some(Err(e)) => Err(DriverError::io("rabbitmq", e)),
            None => Ok(None),
        }
    }
}

#[async_trait]
impl Driver for RabbitDriver {
    fn name(&self) -> &'static str {
        "rabbitmq"
    }

    async fn publisher(&self, topic: &str) -> DriverResult<Box<dyn Publisher>> {
        let (conn, ch) = self.channel().await?;
        let confirms = self.durability == Durability::Persistent;
        let mut props = BasicProperties::default();
        if confirms {
            ch.confirm_select(ConfirmSelectOptions::default())
                .await
                .map_err(|e| DriverError::connect("rabbitmq", e))?;
            props = props.with_delivery_mode(2);
        }
        Ok(Box::new(RabbitPub {
            _conn: conn,
            ch,
            topic: topic.into(),
            props,
            confirms,
        }))
    }

    async fn subscriber(&self, topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        let (conn, ch) = self.channel().await?;
        let err = |e| DriverError::connect("rabbitmq", e);
        let q = ch
            .queue_declare(
                "".into(),
                QueueDeclareOptions {
                    exclusive: true,
                    auto_delete: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .map_err(err)?;
        let qname = q.name().clone();
        ch.queue_bind(
            qname.clone(),
            EXCHANGE.into(),
            topic.into(),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .map_err(err)?;
        let consumer = ch
            .basic_consume(
                qname,
                "".into(),
                BasicConsumeOptions {
                    no_ack: true,
                    ..Default::default()
                },
                FieldTable::default(),
            )
            .await
            .map_err(err)?;
        Ok(Box::new(RabbitSub {
            _conn: conn,
            consumer,
        }))
    }
}
