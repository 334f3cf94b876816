//! The reader task, and the read side it shares: decodes frames from the socket and hands
//! each to the request, subscription or consumer it answers. When a subscription holds
//! more than its capacity, nothing reads the socket until the application catches up: TCP
//! carries the back-pressure to the server, whose slow-consumer policy then applies.
//! Consumer pushes are bounded by credit.
//!
//! Direct reads: a `Subscription::recv` that finds nothing queued waits for the socket
//! itself (one such `recv` at a time), beside the reader task, and whichever of them runs
//! first reads and dispatches (under [`Incoming`]'s lock, so frames keep their order). The
//! receiving task is thus woken by its socket, not by the reader task a scheduling round
//! later: on a one-thread runtime that round also ran every task woken meanwhile (another
//! client's ack, a timer) before the record reached its application. This is the read
//! side's counterpart of the direct writes in `outbox`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use fogline_wire::{decode, Frame, StoredBlock, FLAG_HIGH_PRIORITY};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::error::ClientError;
use crate::shared::{Batch, Inner, Pending, SubShared, Table};
use crate::transport::ReadHalf;

/// Read buffer growth step (a frame known to be larger gets room for all of it).
const READ_CHUNK: usize = 64 << 10;
/// Smallest frame limit applied to what the server sends.
const MIN_INCOMING_FRAME: u32 = 16 << 20;

/// One connection's read side.
pub(crate) struct Incoming {
    pub(crate) sock: ReadHalf,
    max_frame: u32,
    state: Mutex<ReadState>,
    /// Set once nothing may read any more (the connection ended, or is being replaced).
    over: AtomicBool,
    /// Wakes the reader task and a waiting `recv` when the connection is over.
    closed: Notify,
    /// A `recv` waits for the socket: one at a time, since readiness wakes every task
    /// waiting for it (the others wait for their channels, filled by whoever reads).
    lent: AtomicBool,
}

struct ReadState {
    buf: BytesMut,
    /// Holds the large buffer while a small read's frames are decoded from a copy of their
    /// own: a delivered frame shares its buffer while the application holds it, so reserving
    /// the large one again would take a fresh 64 KiB for every message.
    spare: BytesMut,
    /// Why the connection ended, for the reader task to return.
    end: Option<ClientError>,
}

impl Incoming {
    /// `leftover`: bytes read past the handshake.
    pub(crate) fn new(inner: &Inner, sock: ReadHalf, leftover: BytesMut) -> Incoming {
        // Accept what the server may send even if it advertised a small limit
        // for what it accepts.
        let max_frame = inner
            .max_frame
            .load(Ordering::Relaxed)
            .max(MIN_INCOMING_FRAME);
        Incoming {
            sock,
            max_frame,
            state: Mutex::new(ReadState {
                buf: leftover,
                spare: BytesMut::new(),
                end: None,
            }),
            over: AtomicBool::new(false),
            closed: Notify::new(),
            lent: AtomicBool::new(false),
        }
    }

    pub(crate) fn is_over(&self) -> bool {
        self.over.load(Ordering::Acquire)
    }

    /// Reads what the socket holds (once, without waiting) and dispatches every whole
    /// frame. Refuses (false) once the connection is over, or while a subscription is full
    /// (another task's read may have filled it since this one's caller checked): then the
    /// caller must not wait for readiness again, which nobody consumed.
    pub(crate) fn pump(&self, inner: &Inner) -> bool {
        let mut st = self.state.lock();
        if self.is_over() || full_sub(inner).is_some() {
            return false;
        }
        let st = &mut *st;
        fogline_wire::readbuf::restore(&mut st.buf, &mut st.spare);
        fogline_wire::reserve_read(&mut st.buf, READ_CHUNK);
        match self.sock.try_read_buf(&mut st.buf) {
            Ok(0) => self.finish(st, ClientError::Disconnected),
            Ok(_) => {
                fogline_wire::readbuf::compact(&mut st.buf, &mut st.spare);
                self.dispatch_buffered(inner, st);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => self.finish(st, ClientError::Io(e)),
        }
        true
    }

    /// A read error seen while waiting for readiness.
    pub(crate) fn fail(&self, e: std::io::Error) {
        let mut st = self.state.lock();
        if !self.is_over() {
            self.finish(&mut st, ClientError::Io(e));
        }
    }

    fn dispatch_buffered(&self, inner: &Inner, st: &mut ReadState) {
        loop {
            match decode(&mut st.buf, self.max_frame) {
                Ok(Some(frame)) => dispatch(inner, frame),
                Ok(None) => return,
                Err(e) => {
                    let e = ClientError::Protocol(format!("bad frame from server: {e}"));
                    return self.finish(st, e);
                }
            }
        }
    }

    fn finish(&self, st: &mut ReadState, cause: ClientError) {
        st.end = Some(cause);
        self.over.store(true, Ordering::Release);
        self.closed.notify_waiters();
    }

    /// The connection is done with (its tasks have stopped): nobody reads it any more.
    pub(crate) fn close(&self) {
        let _st = self.state.lock();
        self.over.store(true, Ordering::Release);
        self.closed.notify_waiters();
    }

    /// Lends the socket's readiness to one `recv` at a time; `None` while another has it.
    pub(crate) fn lend(self: &Arc<Self>) -> Option<Lent> {
        let free = self
            .lent
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        free.then(|| Lent(self.clone()))
    }

    /// Resolves once the connection is over; enable it before checking [`Self::is_over`].
    pub(crate) fn on_close(&self) -> tokio::sync::futures::Notified<'_> {
        self.closed.notified()
    }
}

/// A `recv`'s turn to wait for the socket; given back when dropped.
pub(crate) struct Lent(Arc<Incoming>);

impl std::ops::Deref for Lent {
    type Target = Incoming;
    fn deref(&self) -> &Incoming {
        &self.0
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        self.0.lent.store(false, Ordering::Release);
    }
}

/// Reads until the connection ends; returns why.
pub(crate) async fn run(inner: Arc<Inner>, incoming: Arc<Incoming>) -> ClientError {
    {
        // A direct read may have come first (the read side is published before this task
        // runs) and ended the connection: then the bytes after the bad frame are not read.
        let mut st = incoming.state.lock();
        if !incoming.is_over() {
            incoming.dispatch_buffered(&inner, &mut st);
        }
    }
    loop {
        let closed = incoming.on_close();
        tokio::pin!(closed);
        closed.as_mut().enable();
        if incoming.is_over() {
            let end = incoming.state.lock().end.take();
            return end.unwrap_or(ClientError::Disconnected);
        }
        // A direct read that ends the connection wakes this task also while it waits for
        // room, or the connection would stay dead until the application drained.
        let ready = async {
            wait_for_room(&inner).await;
            incoming.sock.readable().await
        };
        tokio::select! {
            biased;
            () = closed => continue,
            ready = ready => match ready {
                Ok(()) => {
                    incoming.pump(&inner);
                }
                Err(e) => incoming.fail(e),
            },
        }
        // `readable` and `try_read_buf` do not count against tokio's cooperative budget: a
        // server that keeps the socket full would otherwise keep this thread to itself.
        tokio::task::coop::consume_budget().await;
    }
}

fn dispatch(inner: &Inner, frame: Frame) {
    match frame {
        Frame::PubAck { request_id, .. } => {
            let pending = inner.table.lock().requests.remove(&request_id);
            if let Some(Pending::Acks { waiters, .. }) = pending {
                for w in waiters {
                    let _ = w.send(Ok(()));
                }
                inner.progress.notify_waiters();
            }
        }
        Frame::Deliver {
            sub_id,
            flags,
            batch_timestamp,
            dropped,
            topic,
            records,
        } => deliver(
            &inner.table.lock(),
            sub_id,
            dropped,
            Batch {
                topic,
                priority: flags & FLAG_HIGH_PRIORITY != 0,
                batch_timestamp,
                records,
            },
        ),
        Frame::Records {
            consumer_id,
            records,
        } => {
            let epoch = inner.epoch.load(Ordering::Relaxed);
            consumer_records(&inner.table.lock(), consumer_id, epoch, records);
        }
        Frame::SubOk { sub_id } => {
            let mut table = inner.table.lock();
            let known = match table.subs.get(&sub_id) {
                Some(entry) => {
                    entry.shared.confirmed.store(true, Ordering::Release);
                    true
                }
                None => false,
            };
            if let Some(Pending::Reply(tx)) = table.requests.remove(&u64::from(sub_id)) {
                let _ = tx.send(Ok(Frame::SubOk { sub_id }));
            }
            drop(table);
            if !known {
                // Its `subscribe` gave up (timed out, or was dropped): the server's
                // subscription would deliver to nobody.
                let _ = inner.send_control(&Frame::Unsubscribe { sub_id });
            }
        }
        Frame::ConsumerOk {
            request_id,
            consumer_id,
            next_offset,
        } => {
            let orphan = consumer_ok(
                &mut inner.table.lock(),
                request_id,
                consumer_id,
                next_offset,
            );
            if orphan {
                // Its `consumer` gave up (timed out, or was dropped): close it on the
                // server, or a durable name stays taken there.
                let _ = inner.send_control(&Frame::ConsumerClose { consumer_id });
            }
        }
        reply @ (Frame::Pong { nonce: id }
        | Frame::StreamListOk { request_id: id, .. }
        | Frame::StreamOk { request_id: id, .. }
        | Frame::ConsumerListOk { request_id: id, .. }
        | Frame::QueryOk { request_id: id, .. }
        | Frame::Deleted { request_id: id, .. }
        | Frame::Done { request_id: id }) => {
            let pending = inner.table.lock().requests.remove(&id);
            if let Some(Pending::Reply(tx)) = pending {
                let _ = tx.send(Ok(reply));
            }
        }
        Frame::Notice {
            request_id,
            interested,
        } => crate::announce::notice(inner, request_id, interested),
        Frame::Ping { nonce } => {
            if let Err(e) = inner.send_control(&Frame::Pong { nonce }) {
                tracing::warn!("cannot answer ping: {e}");
            }
        }
        Frame::Error {
            request_id,
            code,
            message,
        } => {
            let err = || ClientError::Server {
                code,
                message: message.to_string(),
            };
            server_error(inner, request_id, err);
        }
        other => tracing::warn!(kind = other.kind(), "unexpected frame from server ignored"),
    }
}

fn deliver(table: &Table, sub_id: u32, dropped: u32, batch: Batch) {
    let Some(entry) = table.subs.get(&sub_id) else {
        return; // unsubscribed meanwhile
    };
    let sub = &entry.shared;
    if dropped > 0 {
        sub.dropped.fetch_add(u64::from(dropped), Ordering::Relaxed);
    }
    let count = batch.records.count() as usize;
    sub.queued.fetch_add(count, Ordering::AcqRel);
    if entry.tx.send(batch).is_err() {
        sub.queued.fetch_sub(count, Ordering::AcqRel);
    }
}

/// A subscription holding more than its capacity, if any: then nothing reads the socket.
fn full_sub(inner: &Inner) -> Option<Arc<SubShared>> {
    inner
        .table
        .lock()
        .subs
        .values()
        .find(|e| e.shared.queued.load(Ordering::Acquire) > e.shared.capacity && !e.tx.is_closed())
        .map(|e| e.shared.clone())
}

/// Waits while any subscription holds more than its capacity.
async fn wait_for_room(inner: &Inner) {
    while let Some(sub) = full_sub(inner) {
        let room = sub.room.notified();
        tokio::pin!(room);
        room.as_mut().enable();
        if sub.queued.load(Ordering::Acquire) > sub.capacity {
            room.await;
        }
    }
}

fn consumer_records(table: &Table, consumer_id: u32, epoch: u64, block: StoredBlock) {
    let Some(entry) = table.consumer_by_server(consumer_id) else {
        tracing::debug!(consumer_id, "records for unknown consumer ignored");
        return;
    };
    let shared = &entry.shared;
    if let Some(tx) = &entry.push_tx {
        // Received, if not yet consumed: an ephemeral consumer re-opened after a reconnect
        // starts past it, so what waits in the channel does not come twice.
        if let Some(last) = block.iter().last() {
            shared
                .next_offset
                .fetch_max(last.offset.saturating_add(1), Ordering::AcqRel);
        }
        let _ = tx.send(Ok((epoch, block)));
        return;
    }
    // The answer to a fetch nobody waits for any more (cancelled, timed out, or replaced by
    // a newer one) is kept for the next fetch rather than dropped: its records were handed
    // out, and without acks they would not come again.
    let waiting = shared.fetch.lock().take();
    let unsent = match waiting {
        Some(tx) => tx.send(Ok(block)).err().and_then(Result::ok),
        None => Some(block),
    };
    if let Some(block) = unsent.filter(|b| b.count() > 0) {
        if let Some(last) = block.iter().last() {
            shared
                .next_offset
                .fetch_max(last.offset.saturating_add(1), Ordering::AcqRel);
        }
        shared.early.lock().push_back(block);
    }
}

/// Applies a ConsumerOk; true when nobody waits for that consumer any more (it must be
/// closed on the server).
fn consumer_ok(table: &mut Table, request_id: u64, consumer_id: u32, next_offset: u64) -> bool {
    let Some(Pending::Open { local, reply }) = table.requests.remove(&request_id) else {
        // The open gave up before its answer (its request is gone).
        return table.consumer_by_server(consumer_id).is_none();
    };
    let Some(entry) = table.consumers.get(&local) else {
        return true; // closed meanwhile
    };
    let c = &entry.shared;
    c.server_id.store(consumer_id, Ordering::Release);
    c.next_offset.store(next_offset, Ordering::Release);
    c.ready.store(true, Ordering::Release);
    c.opened.store(true, Ordering::Release);
    table.by_server.insert(consumer_id, local);
    if let Some(tx) = reply {
        let _ = tx.send(Ok(next_offset));
    }
    false
}

/// Routes an `Error` frame: to the request with that id, else to the
/// consumer or subscription with that id, else it is connection-wide.
fn server_error(inner: &Inner, id: u64, err: impl Fn() -> ClientError) {
    let mut table = inner.table.lock();
    if let Some(pending) = table.requests.remove(&id) {
        match &pending {
            // A refused Subscribe: forget the entry it created.
            Pending::Reply(_) => {
                if let Ok(sub_id) = u32::try_from(id) {
                    table.remove_sub(sub_id);
                }
            }
            // A refused re-open after a reconnect: the consumer is over.
            Pending::Open { local, reply: None } => {
                if let Some(entry) = table.consumers.remove(local) {
                    if let Some(tx) = &entry.push_tx {
                        let _ = tx.send(Err(err()));
                    }
                    *entry.shared.error.lock() = Some(err());
                }
            }
            _ => {}
        }
        pending.fail(inner, err);
        inner.progress.notify_waiters();
        return;
    }
    let Ok(small) = u32::try_from(id) else {
        return;
    };
    if let Some(entry) = table.consumer_by_server(small) {
        if let Some(tx) = entry.shared.fetch.lock().take() {
            let _ = tx.send(Err(err()));
        } else if let Some(tx) = &entry.push_tx {
            let _ = tx.send(Err(err()));
        }
        return;
    }
    if let Some(entry) = table.remove_sub(small) {
        *entry.error.lock() = Some(err());
        return;
    }
    tracing::warn!("server error: {}", err());
}
