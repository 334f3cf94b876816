//! One native-protocol connection.
//!
//! Two tasks share a [`Conn`]: the reader decodes frames and applies them to
//! the broker; the writer owns the socket's write half and sends, in this
//! order, queued replies, high-priority deliveries, then bulk deliveries.
//! Replies are bounded (`max_pending_replies`); deliveries are bounded by each
//! subscription's queue. A protocol error costs this connection only: the
//! client gets an `Error` frame, then the socket is closed.
//!
//! On TCP, a publisher's task may also write a delivery to the socket itself while the
//! writer is idle (see [`crate::direct`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use fogline_broker::{
    Batch, Broker, BrokerError, ClientHandle, DirectSink, Handoff, PeekRead, Protocol, SharedWrite,
    SubscribeOptions, Subscription, WriteHalf,
};
use fogline_wire::{ErrorCode, Frame, FLAG_HIGH_PRIORITY, PROTOCOL_VERSION};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

use crate::acks::{self, Acks};
use crate::consumers::{self, ConsumerSlot};
use crate::direct::{Direct, Sink};
use crate::errors::broker_code;
use crate::outbuf::{OutBuf, SHARE_MIN};
use fogline_net::intake::{Intake, ReadBudget};
use fogline_net::StallLimit;

/// Bytes read from the socket at a time (more for a large frame).
const READ_CHUNK: usize = 64 * 1024;
/// Largest write buffer kept between passes.
const KEEP_WRITE_BUFFER: usize = 4 << 20;
/// Bytes of deliveries taken from one subscription per writer pass.
const DRAIN_BUDGET: usize = 256 * 1024;
/// How long a write may still take once one of the connection's subscriptions was cut off
/// as slow, before the connection ends mid-write.
const CUT_OFF_GRACE: std::time::Duration = std::time::Duration::from_secs(1);
/// Most live subscriptions on one connection (the writer visits each on every pass).
pub(crate) const MAX_SUBSCRIPTIONS: usize = 4096;

/// Settings a connection needs from the server.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub max_frame: u32,
    pub max_pending_replies: usize,
    pub write_stall: std::time::Duration,
    pub hello_timeout: std::time::Duration,
    /// A frame must arrive whole within this once its first byte has.
    pub frame_timeout: std::time::Duration,
}

/// State shared by a connection's reader, writer and consumer tasks.
pub(crate) struct Conn {
    pub broker: Broker,
    pub origin: u64,
    /// This connection in the node's list of connections, with its traffic.
    pub client: ClientHandle,
    limits: Limits,
    /// Wakes the writer: a reply or a delivery is waiting.
    pub waker: Arc<Notify>,
    replies: Mutex<BytesMut>,
    subs: Mutex<Vec<(u32, Arc<Subscription>)>>,
    pub consumers: Mutex<HashMap<u32, Arc<ConsumerSlot>>>,
    /// Announcements (notify_interest), each a task replying its notices.
    pub announcements: Mutex<HashMap<u64, tokio::task::JoinHandle<()>>>,
    /// Set when the connection is going away; the writer flushes and stops.
    closing: AtomicBool,
    /// Wakes the reader and consumer tasks when closing.
    pub closed: Notify,
    /// Wakes push consumers waiting for the writer to take the replies.
    pub drained: Notify,
    /// Management requests under way (see [`crate::admin::MAX_INFLIGHT`]).
    pub admin_slots: Arc<tokio::sync::Semaphore>,
    /// The socket as publishers' tasks may write to it (TCP only).
    pub direct: Option<Direct>,
    /// The node's budget for read buffers (see `fogline_net::intake`).
    budget: Arc<ReadBudget>,
    /// Told when a publisher cuts one of its subscriptions off as slow: the writer may be
    /// stuck in a write to this very client, so it must hear of it there.
    cut_off: Arc<Notify>,
    /// The TLS client certificate's CN, on a listener with `use_identity_as_username`.
    identity: Option<String>,
    /// What the ACL lets the user do; set by Hello, before any other frame is handled.
    access: std::sync::OnceLock<fogline_broker::ClientGuard>,
}

impl Conn {
    fn new(
        broker: Broker,
        peer: String,
        limits: Limits,
        budget: Arc<ReadBudget>,
        direct: Option<Direct>,
        identity: Option<String>,
    ) -> Arc<Conn> {
        let client = broker.register_client(Protocol::Native, peer);
        Arc::new(Conn {
            identity,
            access: std::sync::OnceLock::new(),
            budget,
            cut_off: Arc::new(Notify::new()),
            origin: client.id(),
            client,
            broker,
            limits,
            waker: Arc::new(Notify::new()),
            replies: Mutex::new(BytesMut::new()),
            subs: Mutex::new(Vec::new()),
            consumers: Mutex::new(HashMap::new()),
            announcements: Mutex::new(HashMap::new()),
            closing: AtomicBool::new(false),
            closed: Notify::new(),
            drained: Notify::new(),
            admin_slots: Arc::new(tokio::sync::Semaphore::new(crate::admin::MAX_INFLIGHT)),
            direct,
        })
    }

    /// The TLS client certificate's CN, when it is the user name.
    pub fn identity(&self) -> Option<&str> {
        self.identity.as_deref()
    }

    /// Sets what the ACL lets this connection's user do (at Hello).
    pub fn set_access(&self, access: fogline_broker::ClientGuard) {
        let _ = self.access.set(access);
    }

    /// What the ACL lets this connection's user do.
    pub fn access(&self) -> &fogline_broker::ClientGuard {
        // Hello sets it before any frame that asks; one that did not is a bug, and failing
        // closed (an anonymous user's rights) keeps it from being a hole.
        self.access
            .get_or_init(|| self.broker.guard().client(None, &self.origin.to_string()))
    }

    /// True while replies wait for the writer (a direct delivery must not overtake them).
    pub fn replies_waiting(&self) -> bool {
        !self.replies.lock().is_empty()
    }

    /// Bytes of replies the writer has not taken yet.
    pub fn reply_backlog(&self) -> usize {
        self.replies.lock().len()
    }

    /// Queues a reply frame for the writer.
    pub fn reply(&self, frame: &Frame) {
        self.reply_with(|buf| fogline_wire::encode(frame, buf));
    }

    /// Queues bytes written by `f`; closes a client that does not read its replies.
    pub fn reply_with<E>(&self, f: impl FnOnce(&mut BytesMut) -> Result<(), E>) {
        let mut r = self.replies.lock();
        let mark = r.len();
        if f(&mut r).is_err() {
            r.truncate(mark);
            drop(r);
            self.fail(ErrorCode::Internal, "reply could not be encoded");
            return;
        }
        let over = r.len() > self.limits.max_pending_replies;
        self.client.set_pending_out(r.len());
        drop(r);
        if over {
            tracing::warn!(
                origin = self.origin,
                "client does not read its replies; disconnecting"
            );
            self.fail(ErrorCode::SlowConsumer, "too many unread replies");
        }
        self.waker.notify_one();
    }

    /// Queues an error for `request_id`; the connection stays open.
    pub fn error(&self, request_id: u64, code: ErrorCode, message: impl Into<String>) {
        let message: String = message.into();
        self.reply(&Frame::error(request_id, code, message.as_str()));
    }

    /// Sends a final error and closes the connection after it is flushed.
    pub fn fail(&self, code: ErrorCode, message: &str) {
        {
            let mut r = self.replies.lock();
            // Best effort: an unencodable message is replaced by a fixed one.
            if fogline_wire::encode(&Frame::error(0, code, message), &mut r).is_err() {
                let _ = fogline_wire::encode(&Frame::error(0, code, "error"), &mut r);
            }
        }
        self.close();
    }

    /// Starts closing: the writer flushes what is queued and stops.
    pub fn close(&self) {
        self.closing.store(true, Ordering::Release);
        self.waker.notify_one();
        self.closed.notify_waiters();
    }

    /// True once closing started.
    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }
}

/// Serves one connection until either side closes it. Dropping the future
/// (server shutdown) closes the connection just the same.
pub(crate) async fn serve<S>(
    socket: S,
    peer: String,
    broker: Broker,
    limits: Limits,
    budget: Arc<ReadBudget>,
    identity: Option<String>,
) where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (rd, wr) = tokio::io::split(socket);
    let conn = Conn::new(broker, peer, limits, budget, None, identity);
    serve_halves(rd, wr, conn).await;
}

/// [`serve`] for TCP, whose socket publishers' tasks may write to directly.
pub(crate) async fn serve_tcp(
    socket: TcpStream,
    peer: String,
    broker: Broker,
    limits: Limits,
    budget: Arc<ReadBudget>,
) {
    let (rd, wr) = socket.into_split();
    let wr = Arc::new(WriteHalf::from(wr));
    let direct = Some(Direct::new(wr.clone()));
    let conn = Conn::new(broker, peer, limits, budget, direct, None);
    // A publisher's segment is acknowledged after its forwards, not before (see PeekRead).
    serve_halves(PeekRead::new(rd), SharedWrite(wr), conn).await;
}

async fn serve_halves<R, W>(rd: R, wr: W, conn: Arc<Conn>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut closer = Closer {
        conn: conn.clone(),
        writer: Some(tokio::spawn(write_loop(wr, conn.clone()))),
    };
    if let Err(e) = read_loop(rd, &conn).await {
        tracing::debug!(origin = conn.origin, error = %e, "connection read ended");
    }
    conn.close();
    if let Some(writer) = closer.writer.take() {
        if let Err(e) = writer.await {
            tracing::warn!(error = %e, "connection writer task failed");
        }
    }
}

/// Ends everything a connection started, whether it closed or was dropped:
/// the writer, its subscriptions and its consumers (whose tasks see the
/// close and stop), so nothing keeps the broker alive after it.
struct Closer {
    conn: Arc<Conn>,
    writer: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Closer {
    fn drop(&mut self) {
        self.conn.close();
        if let Some(w) = self.writer.take() {
            w.abort();
        }
        cleanup(&self.conn);
    }
}

fn cleanup(conn: &Conn) {
    if let Some(d) = &conn.direct {
        d.stop();
    }
    for (_, sub) in conn.subs.lock().drain(..) {
        conn.broker.unsubscribe(&sub);
    }
    for (_, task) in conn.announcements.lock().drain() {
        task.abort();
    }
    for (_, slot) in conn.consumers.lock().drain() {
        slot.close();
    }
}

/// Reads and applies frames until the connection ends; acked batches still waiting for
/// durability are then answered (delivered, and acked if the socket still takes it).
async fn read_loop<R: AsyncRead + Unpin>(rd: R, conn: &Arc<Conn>) -> std::io::Result<()> {
    let mut waiting = Acks::default();
    let r = read_frames(rd, conn, &mut waiting).await;
    acks::drain(conn, &mut waiting).await;
    r
}

async fn read_frames<R: AsyncRead + Unpin>(
    mut rd: R,
    conn: &Arc<Conn>,
    waiting: &mut Acks,
) -> std::io::Result<()> {
    let budget = conn.budget.clone();
    let mut intake = Intake::new(budget.clone(), READ_CHUNK, conn.limits.frame_timeout);
    let mut buf = intake.buffer();
    // Holds the large buffer while a small read's bytes are decoded from their own.
    let mut spare = BytesMut::new();
    let mut greeted = false;
    // A connection must say Hello in time: a silent one would hold its slot forever.
    let mut hello = Some(Box::pin(tokio::time::sleep(conn.limits.hello_timeout)));
    loop {
        let mut took = false;
        loop {
            if waiting.is_full() {
                waiting.oldest_ready().await;
                acks::answer_ready(conn, waiting).await;
            }
            match fogline_wire::decode(&mut buf, conn.limits.max_frame) {
                Ok(Some(frame)) => {
                    took = true;
                    // With more of the client's frames already here, let the writers batch.
                    let handoff = if buf.is_empty() {
                        Handoff::Direct
                    } else {
                        Handoff::Queue
                    };
                    if !handle(conn, frame, &mut greeted, handoff, waiting).await {
                        return Ok(());
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::info!(origin = conn.origin, error = %e, "bad frame; closing the connection");
                    conn.fail(e.code(), &e.to_string());
                    return Ok(());
                }
            }
        }
        // Batches made durable meanwhile are answered now, not only when reading pauses.
        acks::answer_ready(conn, waiting).await;
        if greeted {
            hello = None;
        }
        fogline_wire::readbuf::restore(&mut buf, &mut spare);
        intake.settle(&mut buf, took);
        // Registered only when needed (the wait costs a lock), then room is asked again so a
        // release in between is not missed. decode has checked the announced length.
        let freed = budget.room_freed();
        tokio::pin!(freed);
        let need = announced(&buf);
        let mut room = intake.make_room(&mut buf, need);
        if !room {
            freed.as_mut().enable();
            room = intake.make_room(&mut buf, need);
        }
        let deadline = intake.deadline();
        let closed = conn.closed.notified();
        tokio::pin!(closed);
        closed.as_mut().enable();
        if conn.is_closing() {
            return Ok(());
        }
        tokio::select! {
            n = rd.read_buf(&mut buf), if room => {
                if n? == 0 {
                    return Ok(());
                }
                // Frames queued for a slow subscriber then hold their own bytes, not 64 KiB.
                fogline_wire::readbuf::compact(&mut buf, &mut spare);
            }
            // Room in the node's read budget came back: try again.
            () = &mut freed, if !room => {}
            () = until(deadline) => {
                intake.expire();
                tracing::info!(
                    origin = conn.origin,
                    pending = buf.len(),
                    "a frame did not arrive whole in time; closing the connection"
                );
                let why = if room { "did not arrive whole" } else { "found no room in the server's read budget" };
                conn.fail(
                    ErrorCode::FrameTimeout,
                    &format!("a frame {why} within {:?}", intake.timeout()),
                );
                return Ok(());
            }
            () = waiting.oldest_ready() => acks::answer_ready(conn, waiting).await,
            _ = closed => return Ok(()),
            () = until_some(&mut hello) => {
                conn.fail(ErrorCode::NotConnected, "no Hello in time");
                return Ok(());
            }
        }
    }
}

/// The whole size of the frame `buf` starts with, as its length prefix says (0 before the
/// prefix is here).
fn announced(buf: &[u8]) -> usize {
    buf.get(..4).map_or(0, |p| {
        4 + u32::from_le_bytes([p[0], p[1], p[2], p[3]]) as usize
    })
}

/// Waits until `deadline`, or forever when there is none.
async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Waits for the timer, or forever when there is none.
async fn until_some(timer: &mut Option<std::pin::Pin<Box<tokio::time::Sleep>>>) {
    match timer {
        Some(t) => t.as_mut().await,
        None => std::future::pending().await,
    }
}

/// Applies one frame; false when the connection must close.
async fn handle(
    conn: &Arc<Conn>,
    frame: Frame,
    greeted: &mut bool,
    handoff: Handoff,
    waiting: &mut Acks,
) -> bool {
    if !waiting.is_empty() && !matches!(frame, Frame::Publish { request_id, .. } if request_id != 0)
    {
        // Nothing overtakes an acked batch that waits for its flush.
        acks::drain(conn, waiting).await;
    }
    if !*greeted {
        return match frame {
            Frame::Hello {
                version,
                client_name,
                credentials,
            } if version == PROTOCOL_VERSION => {
                if !crate::login::login(conn, client_name.as_str(), credentials).await {
                    return false;
                }
                *greeted = true;
                if !client_name.is_empty() {
                    conn.client.set_name(client_name.as_str());
                }
                conn.reply(&Frame::HelloOk {
                    version: PROTOCOL_VERSION,
                    server_name: format!("fogline {}", env!("CARGO_PKG_VERSION")).into(),
                    max_message: conn.broker.max_message() as u32,
                    max_frame: conn.limits.max_frame,
                });
                true
            }
            Frame::Hello { version, .. } => {
                conn.fail(
                    ErrorCode::UnsupportedVersion,
                    &format!("protocol version {version} is not supported"),
                );
                false
            }
            _ => {
                conn.fail(ErrorCode::NotConnected, "the first frame must be Hello");
                false
            }
        };
    }
    match frame {
        Frame::Ping { nonce } => conn.reply(&Frame::Pong { nonce }),
        Frame::Publish {
            request_id,
            flags,
            topic,
            records,
        } => {
            let checked = match fogline_wire::validate_topic(topic.as_str()) {
                Err(e) => Err(BrokerError::InvalidTopic(format!("topic {topic:?}: {e}"))),
                Ok(()) => conn.access().check_publish(topic.as_str()),
            };
            if let Err(e) = checked {
                // Refused in turn, after the acked batches before it (a fire-and-forget
                // publish found the queue answered already).
                if let Some((request_id, now)) = waiting.push(request_id, Err(e)) {
                    acks::answer(conn, request_id, now, handoff).await;
                }
                return true;
            }
            let batch = Batch {
                topic,
                records,
                timestamp: fogline_broker::now_micros(),
                priority: flags & FLAG_HIGH_PRIORITY != 0,
                origin: conn.origin,
            };
            conn.client
                .count_in(u64::from(batch.count()), batch.weight() as u64);
            // Request id 0: fire-and-forget, so live subscribers need not wait for storage.
            if request_id == 0 {
                if let Err(e) = conn.broker.publish_unacked(batch, handoff).await {
                    conn.error(request_id, broker_code(&e), e.to_string());
                }
            } else {
                let stored = conn.broker.store_acked(batch);
                if let Some((request_id, now)) = waiting.push(request_id, stored) {
                    acks::answer(conn, request_id, now, handoff).await;
                }
            }
        }
        Frame::Subscribe {
            sub_id,
            flags,
            filter,
        } => subscribe(conn, sub_id, flags, filter.as_str(), None),
        Frame::SubscribeProfile {
            sub_id,
            flags,
            filter,
            interest,
        } => match crate::announce::interest(interest.as_str()) {
            Ok(i) => subscribe(conn, sub_id, flags, filter.as_str(), Some(i)),
            Err(e) => conn.error(u64::from(sub_id), ErrorCode::Invalid, e),
        },
        Frame::Announce {
            request_id,
            topic,
            profile,
        } => crate::announce::announce(conn, request_id, topic.as_str(), profile.as_str()),
        Frame::Withdraw { request_id } => crate::announce::withdraw(conn, request_id),
        Frame::Delete { .. } | Frame::Query { .. } => crate::query::handle(conn, frame),
        Frame::Unsubscribe { sub_id } => {
            let found = {
                let mut subs = conn.subs.lock();
                subs.iter()
                    .position(|(id, _)| *id == sub_id)
                    .map(|i| subs.swap_remove(i).1)
            };
            match found {
                Some(sub) => conn.broker.unsubscribe(&sub),
                None => conn.error(
                    u64::from(sub_id),
                    ErrorCode::UnknownSubscription,
                    format!("no subscription {sub_id}"),
                ),
            }
        }
        Frame::ConsumerOpen { .. }
        | Frame::Fetch { .. }
        | Frame::Credit { .. }
        | Frame::Ack { .. }
        | Frame::ConsumerClose { .. } => consumers::handle(conn, frame),
        Frame::StreamList { request_id } => match conn.access().check_admin("streams", false) {
            Ok(()) => conn.reply(&Frame::StreamListOk {
                request_id,
                streams: crate::admin::infos(&conn.broker),
            }),
            Err(e) => conn.error(request_id, broker_code(&e), e.to_string()),
        },
        Frame::StreamCreate { .. }
        | Frame::StreamUpdate { .. }
        | Frame::StreamPurge { .. }
        | Frame::StreamDelete { .. }
        | Frame::StreamGet { .. }
        | Frame::ConsumerList { .. }
        | Frame::ConsumerDelete { .. } => crate::admin::handle(conn, frame).await,
        Frame::Hello { .. } => {
            conn.fail(ErrorCode::Malformed, "Hello sent twice");
            return false;
        }
        other => {
            conn.fail(
                ErrorCode::UnknownFrame,
                &format!("frame kind 0x{:02x} is not sent by clients", other.kind()),
            );
            return false;
        }
    }
    true
}

/// Subscribe flags: bit 0 high priority; bits 1-2 the slow-consumer policy
/// (0 server default, 1 block, 2 drop-oldest, 3 disconnect).
fn subscribe(
    conn: &Arc<Conn>,
    sub_id: u32,
    flags: u8,
    filter: &str,
    interest: Option<fogline_profile::Interest>,
) {
    let (taken, count) = {
        let subs = conn.subs.lock();
        (subs.iter().any(|(id, _)| *id == sub_id), subs.len())
    };
    if taken {
        conn.error(
            u64::from(sub_id),
            ErrorCode::Duplicate,
            format!("subscription id {sub_id} is in use"),
        );
        return;
    }
    if count >= MAX_SUBSCRIPTIONS {
        conn.error(
            u64::from(sub_id),
            ErrorCode::TooMany,
            format!("at most {MAX_SUBSCRIPTIONS} subscriptions per connection"),
        );
        return;
    }
    use fogline_broker::SlowConsumerPolicy as P;
    let policy = match (flags >> 1) & 3 {
        1 => Some(P::Block),
        2 => Some(P::DropOldest),
        3 => Some(P::Disconnect),
        _ => None,
    };
    let opts = SubscribeOptions {
        priority: flags & FLAG_HIGH_PRIORITY != 0,
        policy,
        interest,
        reader: Some(conn.access().clone()),
        ..SubscribeOptions::default()
    };
    let _held = conn.direct.as_ref().map(Direct::hold);
    let sink = conn.direct.as_ref().map(|_| {
        Arc::new(Sink {
            conn: Arc::downgrade(conn),
            sub_id,
        }) as Arc<dyn DirectSink>
    });
    match conn
        .broker
        .subscribe_direct(filter, conn.origin, opts, conn.waker.clone(), sink)
    {
        Ok(sub) => {
            sub.queue().on_cut_off(conn.cut_off.clone());
            conn.subs.lock().push((sub_id, sub));
            conn.reply(&Frame::SubOk { sub_id });
        }
        Err(e) => conn.error(u64::from(sub_id), broker_code(&e), e.to_string()),
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(wr: W, conn: Arc<Conn>) {
    write_passes(wr, &conn).await;
    if let Some(d) = &conn.direct {
        d.stop();
    }
}

async fn write_passes<W: AsyncWrite + Unpin>(wr: W, conn: &Conn) {
    let mut wr = StallLimit::new(wr, conn.limits.write_stall);
    let mut out = OutBuf::with_capacity(READ_CHUNK);
    let mut batches = Vec::new();
    let mut subs: Vec<(u32, Arc<Subscription>)> = Vec::new();
    loop {
        let notified = conn.waker.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(d) = &conn.direct {
            d.take_back(&mut out.buf);
        }
        {
            let mut replies = conn.replies.lock();
            if out.buf.is_empty() {
                std::mem::swap(&mut out.buf, &mut *replies);
            } else {
                out.buf.extend_from_slice(&replies);
                replies.clear();
            }
            conn.client.set_pending_out(0);
        }
        conn.drained.notify_waiters();
        subs.clear();
        subs.extend(conn.subs.lock().iter().cloned());
        let mut more = false;
        let mut slow = false;
        for high_pass in [true, false] {
            for (sub_id, sub) in &subs {
                if high_pass && !sub.queue().has_high() {
                    continue;
                }
                let drained = sub.queue().drain(&mut batches, DRAIN_BUDGET);
                let mut dropped = u32::try_from(drained.dropped).unwrap_or(u32::MAX);
                let (records, bytes) = batches.iter().fold((0u64, 0u64), |(r, w), b| {
                    (r + u64::from(b.count()), w + b.weight() as u64)
                });
                conn.client.count_out(records, bytes);
                for b in batches.drain(..) {
                    let flags = if b.priority { FLAG_HIGH_PRIORITY } else { 0 };
                    let block = b.records.as_bytes();
                    let share = block.len() >= SHARE_MIN;
                    let res = if share {
                        fogline_wire::encode_deliver_header(
                            &mut out.buf,
                            *sub_id,
                            flags,
                            b.timestamp,
                            std::mem::take(&mut dropped),
                            b.topic.as_str(),
                            b.count(),
                            block.len(),
                        )
                    } else {
                        fogline_wire::encode_deliver(
                            &mut out.buf,
                            *sub_id,
                            flags,
                            b.timestamp,
                            std::mem::take(&mut dropped),
                            b.topic.as_str(),
                            b.count(),
                            block,
                        )
                    };
                    match res {
                        Ok(()) if share => out.push_shared(block.clone()),
                        Ok(()) => {}
                        Err(e) => tracing::error!(error = %e, "cannot encode a delivery"),
                    }
                }
                if drained.closed == Some(fogline_broker::queue::CloseReason::SlowConsumer) {
                    slow = true;
                    let msg = format!("subscription {sub_id} could not keep up and was closed");
                    let _ = fogline_wire::encode(
                        &Frame::error(u64::from(*sub_id), ErrorCode::SlowConsumer, msg.as_str()),
                        &mut out.buf,
                    );
                }
                more |= !sub.queue().is_empty();
            }
        }
        if !out.is_empty() {
            let cut = conn.cut_off.notified();
            tokio::pin!(cut);
            cut.as_mut().enable();
            let written = {
                let write = out.write_to(&mut wr);
                tokio::pin!(write);
                tokio::select! {
                    r = &mut write => r,
                    // A subscription was cut off as slow while this write waited on the client:
                    // if the write (with the error that says so) does not finish soon, the client
                    // is the stuck one, and the connection ends mid-write.
                    () = &mut cut => match tokio::time::timeout(CUT_OFF_GRACE, &mut write).await {
                        Ok(r) => r,
                        Err(_) => {
                            tracing::warn!(origin = conn.origin, "disconnecting a slow consumer stuck in a write");
                            conn.close();
                            return;
                        }
                    },
                }
            };
            if let Err(e) = written {
                tracing::debug!(origin = conn.origin, error = %e, "write failed");
                conn.close();
                return;
            }
            // Keep a buffer sized for a busy connection (no regrowth per
            // pass); give back what a burst of very large records grew.
            if out.buf.capacity() > KEEP_WRITE_BUFFER {
                out.buf = BytesMut::with_capacity(READ_CHUNK);
            }
        }
        if slow {
            tracing::warn!(origin = conn.origin, "disconnecting a slow consumer");
            conn.close();
        }
        if conn.is_closing() && conn.replies.lock().is_empty() {
            let _ = wr.shutdown().await;
            return;
        }
        if !more {
            if let Some(d) = &conn.direct {
                d.set_idle();
            }
            notified.await;
        }
    }
}
