//! [`Client`]: connecting, flushing, ping, stream listing and closing.
//! Publishing is in `publish`, subscriptions and consumers in their modules.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fogline_wire::{Frame, StreamInfo};

use crate::conn;
use crate::error::ClientError;
use crate::options::ClientOptions;
use crate::shared::{Guard, Inner, Pending, DEAD};
use crate::transport::Addr;

/// A connection to a fogline server. Cheap to clone; clones share the
/// connection, which closes when the last client, subscription and consumer
/// handle is dropped (queued records are still written first).
///
/// ```no_run
/// # async fn demo() -> Result<(), fogline_client::ClientError> {
/// use fogline_client::{Client, ClientOptions};
/// let client = Client::connect("127.0.0.1:7411", ClientOptions::default()).await?;
/// client.publish("site/robot7/lidar", b"hello").await?;
/// client.flush().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    pub(crate) inner: Arc<Inner>,
    pub(crate) guard: Arc<Guard>,
}

impl Client {
    /// Connects to `addr` (`host:port`, `tcp://host:port` or `unix:/path`)
    /// and completes the handshake.
    ///
    /// # Errors
    /// `InvalidAddress`, `Io` when the connection fails, `Tls` when TLS cannot be set up
    /// or its handshake fails, `Timeout` after `connect_timeout`, `Server`/`Protocol` when
    /// the handshake is refused (`BadCredentials`: a wrong user name or password), `Usage`
    /// for a password without a user name. The first connection is not retried.
    pub async fn connect(addr: &str, opts: ClientOptions) -> Result<Client, ClientError> {
        let addr = Addr::parse(addr)?;
        let inner = Arc::new(Inner::new(opts, addr)?);
        let est = conn::handshake(&inner).await?;
        conn::on_connected(&inner);
        tokio::spawn(conn::supervise(inner.clone(), est));
        Ok(Client {
            guard: Arc::new(Guard(inner.clone())),
            inner,
        })
    }

    /// Whether the client is connected right now.
    pub fn is_connected(&self) -> bool {
        self.inner.state() == crate::shared::CONNECTED
    }

    /// The server's `max_message` from the handshake.
    pub fn max_message(&self) -> u32 {
        self.inner.max_message.load(Ordering::Relaxed)
    }

    /// Waits until every record queued before the call is written to the
    /// socket and every acked one is answered.
    ///
    /// # Errors
    /// `Disconnected` when the connection was lost meanwhile (records may
    /// have been lost), `Closed` when the client is finished, or the first
    /// failure of a [`Client::publish_tracked`] batch since the last flush.
    /// While the server is unreachable and reconnecting goes on, it waits.
    pub async fn flush(&self) -> Result<(), ClientError> {
        let inner = &self.inner;
        let epoch = inner.epoch.load(Ordering::Acquire);
        let target = inner.outbox.lock().appended;
        let ack_before = inner.next_id.load(Ordering::Relaxed);
        loop {
            let notified = inner.progress.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if inner.state() == DEAD {
                return Err(inner.unavailable());
            }
            let written = inner.outbox.lock().done >= target;
            if written {
                let acking = inner
                    .table
                    .lock()
                    .requests
                    .iter()
                    .any(|(id, p)| *id < ack_before && matches!(p, Pending::Acks { .. }));
                if !acking {
                    if let Some(e) = inner.ack_error.lock().take() {
                        return Err(e);
                    }
                    return if inner.epoch.load(Ordering::Acquire) == epoch {
                        Ok(())
                    } else {
                        Err(ClientError::Disconnected)
                    };
                }
            }
            notified.await;
        }
    }

    /// Round-trip time of a Ping.
    ///
    /// # Errors
    /// `Disconnected`, `Timeout`, `Closed`.
    pub async fn ping(&self) -> Result<Duration, ClientError> {
        let id = self.inner.request_id();
        let start = Instant::now();
        match self.inner.call(id, &Frame::Ping { nonce: id }).await? {
            Frame::Pong { .. } => Ok(start.elapsed()),
            other => Err(unexpected(&other)),
        }
    }

    /// The server's streams.
    ///
    /// # Errors
    /// `Server`, `Disconnected`, `Timeout`, `Closed`.
    pub async fn streams(&self) -> Result<Vec<StreamInfo>, ClientError> {
        let id = self.inner.request_id();
        match self
            .inner
            .call(id, &Frame::StreamList { request_id: id })
            .await?
        {
            Frame::StreamListOk { streams, .. } => Ok(streams),
            other => Err(unexpected(&other)),
        }
    }

    /// Writes what is queued, then closes the connection and waits (up to the request
    /// timeout) until it is closed: over TLS, the session's task has sent everything on.
    /// Other handles (clones, subscriptions, consumers) stop working.
    ///
    /// # Errors
    /// As [`Client::flush`].
    pub async fn close(self) -> Result<(), ClientError> {
        let flushed = self.flush().await;
        self.inner.shutdown.send_replace(true);
        let inner = &self.inner;
        let closed = async {
            loop {
                let notified = inner.progress.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if inner.state() == DEAD {
                    return;
                }
                notified.await;
            }
        };
        let _ = tokio::time::timeout(inner.opts.request_timeout, closed).await;
        flushed
    }
}

pub(crate) fn unexpected(frame: &Frame) -> ClientError {
    ClientError::Protocol(format!(
        "unexpected reply frame kind 0x{:02x}",
        frame.kind()
    ))
}
