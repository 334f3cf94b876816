//! Options and plain data types of the client API.

use std::time::Duration;

use bytes::Bytes;
use fogline_net::tls::ClientTls;
use fogline_wire::{Credentials, StartPosition};

use crate::error::ClientError;

/// How the client behaves; `ClientOptions::default()` suits most uses.
#[derive(Clone)]
pub struct ClientOptions {
    /// Sent in Hello, shown in server logs.
    pub client_name: String,
    /// Connect over TLS to a TLS listener; `None`: plain. Over TLS, `flush` means handed
    /// to the TLS session's task; `Client::close` waits until that has sent it on.
    pub tls: Option<ClientTls>,
    /// The user name sent in Hello, for a node with users (`[auth]`).
    pub username: Option<String>,
    /// The password sent with `username` (none: an empty one). Never printed by `Debug`.
    pub password: Option<String>,
    /// Reconnect after losing an established connection; `None` disables it
    /// (then every call fails with `Disconnected` once the link drops).
    /// On by default: edge links drop, and publishers should ride it out.
    pub reconnect: Option<Reconnect>,
    /// Bound of the publish buffer in bytes (encoded frames not yet handed
    /// to the socket). Publishing waits while it is full.
    pub max_buffered_bytes: usize,
    /// Largest Publish frame the client builds (also capped by the server's
    /// `max_frame`); a single larger record goes in a frame of its own.
    pub max_batch_bytes: usize,
    /// Most acked Publish frames awaiting their PubAck; `send_acked` waits
    /// for a slot beyond it.
    pub max_inflight_acks: usize,
    /// Limit for connecting plus the handshake.
    pub connect_timeout: Duration,
    /// How long a request waits for its answer (a fetch adds its own wait).
    pub request_timeout: Duration,
    /// Ping the server after this much time and treat the connection as
    /// lost when the Pong does not come within the same time, so a link
    /// that dies silently is noticed; `None` disables it.
    pub keepalive: Option<Duration>,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            client_name: "fogline-client".to_string(),
            tls: None,
            username: None,
            password: None,
            reconnect: Some(Reconnect::default()),
            max_buffered_bytes: 8 << 20,
            max_batch_bytes: 64 << 10,
            max_inflight_acks: 64,
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            keepalive: Some(Duration::from_secs(30)),
        }
    }
}

impl std::fmt::Debug for ClientOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientOptions")
            .field("client_name", &self.client_name)
            .field("tls", &self.tls)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("reconnect", &self.reconnect)
            .field("max_buffered_bytes", &self.max_buffered_bytes)
            .field("max_batch_bytes", &self.max_batch_bytes)
            .field("max_inflight_acks", &self.max_inflight_acks)
            .field("connect_timeout", &self.connect_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("keepalive", &self.keepalive)
            .finish()
    }
}

impl ClientOptions {
    /// The credentials Hello carries.
    ///
    /// # Errors
    /// `Usage` for a password without a user name.
    pub(crate) fn credentials(&self) -> Result<Option<Credentials>, ClientError> {
        match (&self.username, &self.password) {
            (Some(user), password) => Ok(Some(Credentials {
                username: user.as_str().into(),
                password: password.as_deref().unwrap_or("").into(),
            })),
            (None, Some(_)) => Err(ClientError::Usage("a password needs a user name")),
            (None, None) => Ok(None),
        }
    }
}

/// Reconnect backoff: `initial`, doubling up to `max`, forever unless
/// `max_attempts` is set (counted per outage).
#[derive(Clone, Debug)]
pub struct Reconnect {
    /// First delay.
    pub initial: Duration,
    /// Largest delay.
    pub max: Duration,
    /// Give up after this many failed attempts in a row.
    pub max_attempts: Option<u32>,
}

impl Default for Reconnect {
    fn default() -> Reconnect {
        Reconnect {
            initial: Duration::from_millis(50),
            max: Duration::from_secs(5),
            max_attempts: None,
        }
    }
}

/// One record to publish with every field chosen.
#[derive(Clone, Debug, Default)]
pub struct PublishRecord {
    /// Topic (no wildcards).
    pub topic: String,
    /// Header block (see `fogline_wire::HeadersBuilder`); empty for none.
    pub headers: Bytes,
    /// Payload.
    pub payload: Bytes,
    /// Microseconds since the UNIX epoch; `None` lets the server assign it.
    pub timestamp: Option<u64>,
    /// High priority: overtakes bulk traffic on every queue.
    pub priority: bool,
}

impl PublishRecord {
    /// A record with just a topic and payload.
    pub fn new(topic: impl Into<String>, payload: impl Into<Bytes>) -> PublishRecord {
        PublishRecord {
            topic: topic.into(),
            payload: payload.into(),
            ..PublishRecord::default()
        }
    }
}

/// Options of a live subscription.
#[derive(Clone, Debug)]
pub struct SubscribeOptions {
    /// Ask the server for high-priority delivery.
    pub priority: bool,
    /// Records buffered client-side; past it the client stops reading the
    /// connection until the application takes records (see
    /// [`Subscription`](crate::Subscription)), so the server's slow-consumer
    /// policy applies. An empty buffer takes any one batch.
    pub capacity: usize,
    /// Only records whose data profile (their headers) satisfies this interest: the terms
    /// of an interest profile in text form (`sensor=li* alt=100..`, `docs/PROFILES.md`).
    /// `None` or no terms: every record on the filter's topics.
    pub interest: Option<String>,
}

impl Default for SubscribeOptions {
    fn default() -> SubscribeOptions {
        SubscribeOptions {
            priority: false,
            capacity: 65_536,
            interest: None,
        }
    }
}

/// Options of a consumer on a stream.
#[derive(Clone, Debug)]
pub struct ConsumerOptions {
    /// Empty: ephemeral. Otherwise durable: the server keeps the acked position.
    pub name: String,
    /// Topic filter; empty for everything in the stream.
    pub filter: String,
    /// Where to start.
    pub start: StartPosition,
    /// Redeliver unacked records after this; `None`: auto-ack on delivery.
    pub ack_timeout: Option<Duration>,
    /// Most unacked records outstanding.
    pub max_inflight: u32,
    /// 0: pull with `fetch`. >0: the server pushes up to this many records
    /// ahead and `recv` tops the credit up as they are consumed.
    pub push_credit: u32,
}

impl Default for ConsumerOptions {
    fn default() -> ConsumerOptions {
        ConsumerOptions {
            name: String::new(),
            filter: String::new(),
            start: StartPosition::Earliest,
            ack_timeout: Some(Duration::from_secs(30)),
            max_inflight: 1024,
            push_credit: 0,
        }
    }
}

/// A record received by a live subscription.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// The record's topic.
    pub topic: fogline_wire::Str,
    /// Header block (parse with `fogline_wire::Headers::parse`).
    pub headers: Bytes,
    /// Payload.
    pub payload: Bytes,
    /// Publisher's timestamp, or the server's receive time when it had none.
    pub timestamp: u64,
    /// Delivered on a high-priority path.
    pub priority: bool,
}

/// A record received by a consumer.
pub type StoredMessage = fogline_wire::StoredRecord;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_need_a_user_and_the_password_is_not_printed() {
        let mut opts = ClientOptions {
            username: Some("ana".into()),
            password: Some("s3cret".into()),
            ..ClientOptions::default()
        };
        let c = opts.credentials().unwrap().unwrap();
        assert_eq!((&*c.username, &*c.password), ("ana", "s3cret"));
        assert!(!format!("{opts:?}").contains("s3cret"));
        opts.password = None;
        assert_eq!(&*opts.credentials().unwrap().unwrap().password, "");
        opts.username = None;
        assert!(opts.credentials().unwrap().is_none());
        opts.password = Some("x".into());
        assert!(opts.credentials().is_err());
    }
}
