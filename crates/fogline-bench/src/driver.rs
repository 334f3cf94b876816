//! The one trait every system plugs in through.
//!
//! A [`Driver`] knows how to reach one running system; it hands out [`Publisher`]s and
//! [`Subscriber`]s on a topic, each with its own connection (as separate processes would
//! have). Payloads are opaque bytes (see [`crate::payload`]); a driver must deliver them
//! unchanged. To add a system: implement the three traits in `drivers/<system>.rs`, add a
//! [`crate::System`] variant and its arm in `drivers::connect`.

use async_trait::async_trait;
use bytes::Bytes;

/// How messages are kept and acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Fire and forget, in memory (the 000 and 002 matrices).
    Volatile,
    /// Stored persistently and acknowledged to the producer (the 004 comparison).
    Persistent,
}

/// Errors of a driver, with the system's own message.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// Could not connect or subscribe.
    #[error("{system}: cannot connect: {message}")]
    Connect {
        /// Which system.
        system: &'static str,
        /// The client library's message.
        message: String,
    },
    /// A publish, receive or acknowledgement failed.
    #[error("{system}: {message}")]
    Io {
        /// Which system.
        system: &'static str,
        /// The client library's message.
        message: String,
    },
    /// The system cannot do what the scenario asks (e.g. replay on a pure pub/sub system).
    #[error("{system} does not support {what}")]
    Unsupported {
        /// Which system.
        system: &'static str,
        /// What was asked.
        what: &'static str,
    },
}

impl DriverError {
    /// A connection error from any displayable client error.
    pub fn connect(system: &'static str, e: impl std::fmt::Display) -> Self {
        Self::Connect {
            system,
            message: e.to_string(),
        }
    }

    /// An I/O error from any displayable client error.
    pub fn io(system: &'static str, e: impl std::fmt::Display) -> Self {
        Self::Io {
            system,
            message: e.to_string(),
        }
    }
}

/// Result of driver calls.
pub type DriverResult<T> = Result<T, DriverError>;

/// Reaches one running system.
#[async_trait]
pub trait Driver: Send + Sync {
    /// The system's short name, as in reports.
    fn name(&self) -> &'static str;

    /// Creates whatever the topic needs before anyone uses it (a Kafka topic, a JetStream
    /// stream) for messages up to `max_message` bytes. The default does nothing.
    ///
    /// # Errors
    /// When the system refuses.
    async fn prepare(&self, _topic: &str, _max_message: usize) -> DriverResult<()> {
        Ok(())
    }

    /// A new producer connection on `topic`.
    ///
    /// # Errors
    /// When the system cannot be reached.
    async fn publisher(&self, topic: &str) -> DriverResult<Box<dyn Publisher>>;

    /// A new live subscription to `topic`; returns once the subscription is registered
    /// where the system can confirm it (the harness still probes with warm-up messages).
    ///
    /// # Errors
    /// When the system cannot be reached.
    async fn subscriber(&self, topic: &str) -> DriverResult<Box<dyn Subscriber>>;

    /// A reader of everything already stored on `topic`, from the first message.
    ///
    /// # Errors
    /// [`DriverError::Unsupported`] for systems that keep no log (the default).
    async fn replayer(&self, _topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        Err(DriverError::Unsupported {
            system: self.name(),
            what: "replay of stored messages",
        })
    }
}

/// Sends messages on one topic.
#[async_trait]
pub trait Publisher: Send {
    /// Queues or sends one message. May buffer: the harness calls [`Publisher::flush`] before
    /// it waits, so buffering never delays a message past the next pause.
    ///
    /// # Errors
    /// When the connection fails or the system rejects the message.
    async fn send(&mut self, payload: Bytes) -> DriverResult<()>;

    /// Pushes out everything buffered; under [`Durability::Persistent`] also waits until the
    /// system acknowledged every message sent so far.
    ///
    /// # Errors
    /// As for `send`.
    async fn flush(&mut self) -> DriverResult<()>;

    /// Ends the stream: returns once everything sent was handed to the system (and, where
    /// the system reports it, accepted). The default is [`Publisher::flush`].
    ///
    /// # Errors
    /// As for `send`.
    async fn close(&mut self) -> DriverResult<()> {
        self.flush().await
    }
}

/// A message as a system's client library handed it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Received {
    /// Its bytes.
    pub payload: Bytes,
    /// When the library handed it over ([`crate::clock::now_ns`]). A driver reads the clock
    /// before any work of its own (a copy out of the library's buffer, an acknowledgement it
    /// writes, a hand-off between threads), so that a latency times the system and its
    /// client, not the harness's glue: a copy of a 1 MiB message alone takes tens of us.
    pub at_ns: u64,
}

impl Received {
    /// A message handed over now.
    pub fn now(payload: Bytes) -> Received {
        Received {
            payload,
            at_ns: crate::clock::now_ns(),
        }
    }
}

/// Receives messages of one subscription.
#[async_trait]
pub trait Subscriber: Send {
    /// The next message; `Ok(None)` when the system closed the subscription.
    ///
    /// # Errors
    /// When the connection fails (e.g. a slow consumer is cut off): that is counted as loss.
    async fn recv(&mut self) -> DriverResult<Option<Received>>;
}
