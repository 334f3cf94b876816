//! Connection lifecycle: handshake, the supervisor that runs one reader and
//! one writer task per connection, and what happens when a connection is
//! lost (fail what was in flight, keep what was not sent, reconnect with
//! backoff, re-subscribe, re-open consumers).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::BytesMut;
use fogline_wire::{
    decode, encode, ErrorCode, Frame, StartPosition, FLAG_HIGH_PRIORITY, PROTOCOL_VERSION,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::task::JoinHandle;

use crate::error::ClientError;
use crate::shared::{Inner, Pending, CONNECTED, DEAD, RECONNECTING};
use crate::transport::{ReadHalf, WriteHalf};
use crate::{reader, writer};

/// The handshake's answer may not exceed this before limits are known.
const HANDSHAKE_MAX_FRAME: u32 = 1 << 20;

/// A connection that completed Hello/HelloOk.
pub(crate) struct Established {
    r: ReadHalf,
    w: Arc<WriteHalf>,
    /// Bytes read past the HelloOk.
    leftover: BytesMut,
    /// The TLS session's task (see `pump`): a closing client waits for it, since what the
    /// writer wrote may still be on its way to the server.
    pump: Option<JoinHandle<()>>,
}

/// Connects, sends Hello and waits for HelloOk (within `connect_timeout`).
pub(crate) async fn handshake(inner: &Inner) -> Result<Established, ClientError> {
    let limit = inner.opts.connect_timeout;
    match tokio::time::timeout(limit, handshake_inner(inner)).await {
        Ok(result) => result,
        Err(_) => Err(ClientError::Timeout),
    }
}

async fn handshake_inner(inner: &Inner) -> Result<Established, ClientError> {
    let tls = inner.tls.is_some();
    let mut stream = inner
        .addr
        .connect(inner.tls.as_ref())
        .await
        .map_err(|e| io_error(tls, e))?;
    let mut out = BytesMut::new();
    let hello = Frame::Hello {
        version: PROTOCOL_VERSION,
        client_name: inner.opts.client_name.as_str().into(),
        credentials: inner.credentials.clone(),
    };
    encode(&hello, &mut out)?;
    let io = stream.io();
    io.write_all(&out).await.map_err(|e| after_tls(tls, e))?;
    io.flush().await.map_err(|e| after_tls(tls, e))?;
    let mut buf = BytesMut::with_capacity(4096);
    loop {
        if !tls && is_tls_alert(&buf) {
            return Err(ClientError::Protocol(
                "the server answered with a TLS alert: this is a TLS listener (connect with TLS)"
                    .into(),
            ));
        }
        let frame = decode(&mut buf, HANDSHAKE_MAX_FRAME)
            .map_err(|e| ClientError::Protocol(format!("bad handshake frame: {e}")))?;
        match frame {
            Some(Frame::HelloOk {
                version,
                max_message,
                max_frame,
                ..
            }) => {
                if version != PROTOCOL_VERSION {
                    return Err(ClientError::Protocol(format!(
                        "server speaks protocol version {version}, client {PROTOCOL_VERSION}"
                    )));
                }
                inner.max_message.store(max_message, Ordering::Relaxed);
                inner.max_frame.store(max_frame, Ordering::Relaxed);
                let (r, w, pump) = stream.into_halves()?;
                return Ok(Established {
                    r,
                    w,
                    leftover: buf,
                    pump,
                });
            }
            Some(Frame::Error { code, message, .. }) => {
                return Err(ClientError::Server {
                    code,
                    message: message.to_string(),
                })
            }
            Some(other) => {
                return Err(ClientError::Protocol(format!(
                    "expected HelloOk, got frame kind 0x{:02x}",
                    other.kind()
                )))
            }
            None => match io.read_buf(&mut buf).await {
                Ok(0) if tls => return Err(ClientError::Tls(CLOSED_AFTER_HANDSHAKE.into())),
                Ok(0) => return Err(ClientError::Disconnected),
                Ok(_) => {}
                Err(e) => return Err(after_tls(tls, e)),
            },
        }
    }
}

/// A server that refuses the client's certificate may close without an alert the client
/// gets to read (its close can reset the connection first).
const CLOSED_AFTER_HANDSHAKE: &str =
    "the server closed the connection after the TLS handshake (does it require a client \
     certificate, or refuse this one?)";

/// An I/O error of connecting; on TLS, the handshake's reasons in words.
fn io_error(tls: bool, e: std::io::Error) -> ClientError {
    match fogline_net::tls::explain(&e) {
        Some(why) if tls => ClientError::Tls(why),
        _ => ClientError::Io(e),
    }
}

/// As [`io_error`], for the Hello exchange after a TLS handshake.
fn after_tls(tls: bool, e: std::io::Error) -> ClientError {
    use std::io::ErrorKind::{BrokenPipe, ConnectionReset};
    if tls && matches!(e.kind(), ConnectionReset | BrokenPipe) {
        return ClientError::Tls(CLOSED_AFTER_HANDSHAKE.into());
    }
    io_error(tls, e)
}

/// A TLS alert record (content type 21, version 3.x, length 2): what a TLS listener sends a
/// client that does not speak TLS. As a frame's length prefix it would announce 66-263 KiB,
/// which no HelloOk or Error frame is.
fn is_tls_alert(buf: &[u8]) -> bool {
    matches!(buf, [0x15, 0x03, 0x01..=0x04, 0x00, 0x02, ..])
}

/// A refused login: the same credentials would be refused again, so reconnecting stops.
fn is_refusal(code: ErrorCode) -> bool {
    matches!(code, ErrorCode::BadCredentials | ErrorCode::NotAuthorized)
}

/// Marks the client connected and queues the frames that restore live
/// subscriptions and consumers on the new connection.
pub(crate) fn on_connected(inner: &Inner) {
    inner.outbox.lock().drop_control();
    let mut frames = BytesMut::new();
    {
        let mut table = inner.table.lock();
        table.connected = true;
        inner.state.store(CONNECTED, Ordering::Release);
        for entry in table.subs.values() {
            let sub = &entry.shared;
            if sub.confirmed.load(Ordering::Acquire) {
                if let Err(e) = encode(&sub.frame(), &mut frames) {
                    tracing::warn!("cannot re-subscribe {}: {e}", sub.filter);
                }
            }
        }
        let mut reopen = Vec::new();
        for (local, entry) in &table.consumers {
            let c = &entry.shared;
            if !c.opened.load(Ordering::Acquire) {
                continue;
            }
            let start = if c.opts.name.is_empty() {
                StartPosition::Offset(c.next_offset.load(Ordering::Acquire))
            } else {
                StartPosition::Resume
            };
            let id = inner.request_id();
            let frame = crate::consumer::open_frame(id, &c.stream, &c.opts, start);
            match encode(&frame, &mut frames) {
                Ok(()) => reopen.push((id, *local)),
                Err(e) => tracing::warn!("cannot re-open consumer on {}: {e}", c.stream),
            }
        }
        for (&request_id, a) in &table.announcements {
            if let Err(e) = encode(&a.frame(request_id), &mut frames) {
                tracing::warn!("cannot announce {} again: {e}", a.topic);
            }
        }
        for (id, local) in reopen {
            table
                .requests
                .insert(id, Pending::Open { local, reply: None });
        }
    }
    if !frames.is_empty() {
        inner.queue_control(&frames);
    }
}

/// Runs connections until shutdown, or until reconnecting is off or gives up.
pub(crate) async fn supervise(inner: Arc<Inner>, first: Established) {
    let mut next = Some(first);
    loop {
        let est = match next.take() {
            Some(est) => est,
            None => match reconnect(&inner).await {
                Some(est) => {
                    on_connected(&inner);
                    est
                }
                None => return die(&inner),
            },
        };
        let Established {
            r,
            w,
            leftover,
            pump,
        } = est;
        let incoming = Arc::new(reader::Incoming::new(&inner, r, leftover));
        *inner.incoming.lock() = Some(incoming.clone());
        let mut reader = tokio::spawn(reader::run(inner.clone(), incoming.clone()));
        let mut writer = tokio::spawn(writer::run(inner.clone(), w));
        let cause = tokio::select! {
            r = &mut reader => { writer.abort(); let _ = writer.await; r }
            w = &mut writer => { reader.abort(); let _ = reader.await; w }
            k = keepalive(&inner) => {
                reader.abort();
                writer.abort();
                let _ = reader.await;
                let _ = writer.await;
                Ok(k)
            }
        };
        // Before `lost`: a direct read must not dispatch this connection's frames (its
        // consumer ids, its answers) into the state of the next one.
        inner.incoming.lock().take();
        incoming.close();
        match cause {
            Ok(ClientError::Closed) => {
                // The writer shut its side down: the pump sends the rest, then ends, unless
                // the server takes nothing: then it is given up with the close.
                if let Some(mut pump) = pump {
                    let limit = inner.opts.request_timeout;
                    if tokio::time::timeout(limit, &mut pump).await.is_err() {
                        pump.abort();
                    }
                }
            }
            Ok(e) => tracing::info!("connection lost: {e}"),
            Err(e) => tracing::warn!("connection task failed: {e}"),
        }
        lost(&inner);
        if *inner.shutdown.borrow() || inner.opts.reconnect.is_none() {
            return die(&inner);
        }
    }
}

/// Pings every `keepalive` interval; returns when a Pong does not come
/// back within the interval (or never, when keepalive is off).
async fn keepalive(inner: &Inner) -> ClientError {
    let Some(every) = inner.opts.keepalive else {
        return std::future::pending().await;
    };
    loop {
        tokio::time::sleep(every).await;
        let id = inner.request_id();
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Err(e) = inner.request(id, Pending::Reply(tx), &Frame::Ping { nonce: id }) {
            return e;
        }
        match tokio::time::timeout(every, rx).await {
            Ok(Ok(Ok(_))) => {}
            Ok(Ok(Err(e))) => return e,
            Ok(Err(_)) => return ClientError::Disconnected,
            Err(_) => {
                inner.table.lock().requests.remove(&id);
                return ClientError::Protocol("no answer to keepalive ping".into());
            }
        }
    }
}

/// Cleans up after a lost connection: requests whose frames were written
/// (or were being written) fail with `Disconnected`. Acked publishes still
/// in the buffer stay pending and go out on the next connection, unless an
/// acked publish was cut: then they fail too, so a caller that publishes
/// the failed records again, in order, keeps their order (kept, they would
/// reach the server ahead of the earlier records retried after them).
fn lost(inner: &Inner) {
    inner.state.store(RECONNECTING, Ordering::Release);
    inner.epoch.fetch_add(1, Ordering::AcqRel);
    {
        // Outbox, then table: the lock order (see `shared`).
        let mut outbox = inner.outbox.lock();
        outbox.lose_connection();
        let done = outbox.done;
        let mut table = inner.table.lock();
        table.connected = false;
        table.by_server.clear();
        let mut ids: Vec<u64> = Vec::new();
        let mut cut_acks = false;
        for (id, p) in &table.requests {
            match p {
                Pending::Acks { end, .. } if *end > done => {}
                Pending::Acks { .. } => {
                    cut_acks = true;
                    ids.push(*id);
                }
                _ => ids.push(*id),
            }
        }
        if cut_acks {
            ids.extend(outbox.drop_acked());
        }
        drop(outbox);
        for id in ids {
            if let Some(p) = table.requests.remove(&id) {
                p.fail(inner, || ClientError::Disconnected);
            }
        }
        for entry in table.consumers.values() {
            entry.shared.ready.store(false, Ordering::Release);
            if let Some(tx) = entry.shared.fetch.lock().take() {
                let _ = tx.send(Err(ClientError::Disconnected));
            }
        }
        if cut_acks {
            inner.space.notify_waiters(); // buffer room freed
        }
    }
    inner.progress.notify_waiters();
}

/// The client is finished: fail everything, end subscriptions and consumers.
fn die(inner: &Inner) {
    inner.state.store(DEAD, Ordering::Release);
    let err = || inner.unavailable();
    inner.outbox.lock().drop_all();
    {
        let mut table = inner.table.lock();
        table.connected = false;
        for (_, p) in table.requests.drain() {
            p.fail(inner, err);
        }
        table.subs.clear();
        for (_, entry) in table.consumers.drain() {
            if let Some(tx) = entry.shared.fetch.lock().take() {
                let _ = tx.send(Err(err()));
            }
        }
        table.by_server.clear();
    }
    inner.progress.notify_waiters();
    inner.space.notify_waiters();
}

/// Tries to connect again with backoff; `None` on shutdown or when the
/// policy gives up.
async fn reconnect(inner: &Inner) -> Option<Established> {
    let policy = inner.opts.reconnect.clone()?;
    let mut shutdown = inner.shutdown.subscribe();
    let mut delay = policy.initial;
    let mut attempts: u32 = 0;
    loop {
        if *shutdown.borrow_and_update() {
            return None;
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.changed() => return None,
        }
        match handshake(inner).await {
            Ok(est) => return Some(est),
            Err(ClientError::Server { code, message }) if is_refusal(code) => {
                tracing::warn!("reconnect refused, giving up: {code}: {message}");
                *inner.refused.lock() = Some((code, message));
                return None;
            }
            Err(e) => {
                attempts = attempts.saturating_add(1);
                tracing::debug!(attempts, "reconnect failed: {e}");
                if policy.max_attempts.is_some_and(|max| attempts >= max) {
                    return None;
                }
                delay = (delay * 2).min(policy.max);
            }
        }
    }
}

/// Flags byte for a priority choice.
pub(crate) fn flags(priority: bool) -> u8 {
    if priority {
        FLAG_HIGH_PRIORITY
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tls_alert_is_told_from_a_frame() {
        assert!(is_tls_alert(&[0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x32]));
        assert!(!is_tls_alert(&[0x15, 0x03, 0x03, 0x00]));
        let mut hello_ok = BytesMut::new();
        let frame = Frame::HelloOk {
            version: PROTOCOL_VERSION,
            server_name: "n".into(),
            max_message: 1,
            max_frame: 1,
        };
        encode(&frame, &mut hello_ok).unwrap();
        assert!(!is_tls_alert(&hello_ok));
    }
}
