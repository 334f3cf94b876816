//! Durable consumers on a connection: open, fetch (pull), credit (push), ack, close.
//!
//! A consumer lives in a [`ConsumerSlot`]. Its lock is never held across an
//! await: a waiting fetch or push task polls under the lock, then waits on the
//! stream's tail (or the next redelivery deadline) without it, so acks on the
//! same connection are never stuck behind a long poll.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fogline_broker::{Consumer, ConsumerOptions, Delivery, Start};
use fogline_wire::{ErrorCode, Frame, RecordsWriter, StartPosition, StoredRecordRef};
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::connection::Conn;
use crate::errors::broker_code;

/// Most records in one `Records` frame.
const MAX_BATCH: usize = 1024;
/// Most consumers open on one connection: each may hold a task and a redelivery table.
pub(crate) const MAX_CONSUMERS: usize = 1024;
/// Unsent reply bytes above which a push consumer waits for the writer: a client that
/// granted much credit still gets its records at the pace it reads them.
const PUSH_BACKLOG: usize = 1 << 20;

/// One open consumer and its push credit.
pub(crate) struct ConsumerSlot {
    consumer: Mutex<Consumer>,
    credit: AtomicU32,
    wake: Notify,
    closed: AtomicBool,
    /// The newest fetch; an older one still waiting gives way to it unanswered, so a
    /// consumer has one waiting fetch at most.
    fetch_gen: AtomicU64,
}

impl ConsumerSlot {
    /// Stops its tasks and saves a durable position (on drop of the consumer).
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.wake.notify_waiters();
        if let Err(e) = self.consumer.lock().save() {
            tracing::warn!(error = %e, "could not save a consumer position");
        }
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
}

pub(crate) fn handle(conn: &Arc<Conn>, frame: Frame) {
    match frame {
        Frame::ConsumerOpen {
            request_id,
            stream,
            name,
            filter,
            start,
            ack_timeout_ms,
            max_inflight,
            push_credit,
        } => {
            if conn.consumers.lock().len() >= MAX_CONSUMERS {
                conn.error(
                    request_id,
                    ErrorCode::TooMany,
                    format!("at most {MAX_CONSUMERS} consumers per connection"),
                );
                return;
            }
            let opts = ConsumerOptions {
                name: (!name.is_empty()).then(|| name.to_string()),
                filter: (!filter.is_empty()).then(|| filter.to_string()),
                start: match start {
                    StartPosition::Earliest => Start::Earliest,
                    StartPosition::Latest => Start::Latest,
                    StartPosition::Offset(o) => Start::Offset(o),
                    StartPosition::Time(t) => Start::Time(t),
                    StartPosition::Resume => Start::Resume,
                },
                ack_timeout: (ack_timeout_ms > 0)
                    .then(|| Duration::from_millis(u64::from(ack_timeout_ms))),
                max_inflight: if max_inflight == 0 {
                    1024
                } else {
                    max_inflight as usize
                },
            };
            if let Err(e) = crate::login::may_read(conn, stream.as_str(), filter.as_str()) {
                conn.error(request_id, broker_code(&e), e.to_string());
                return;
            }
            // A name is bound only where logins are proven.
            let user = conn
                .broker
                .guard()
                .authenticates()
                .then(|| conn.access().user().map(str::to_string))
                .flatten();
            let opener = fogline_broker::Opener::Client(user.as_deref());
            match conn.broker.open_consumer_as(stream.as_str(), opts, opener) {
                Ok(consumer) => open(conn, request_id, consumer, push_credit),
                Err(e) => conn.error(request_id, broker_code(&e), e.to_string()),
            }
        }
        Frame::Fetch {
            consumer_id,
            max_records,
            max_wait_ms,
        } => {
            let Some(slot) = slot(conn, consumer_id) else {
                return;
            };
            let conn = conn.clone();
            let max = (max_records as usize).clamp(1, MAX_BATCH);
            let until = Instant::now() + Duration::from_millis(u64::from(max_wait_ms));
            let gen = slot.fetch_gen.fetch_add(1, Ordering::AcqRel) + 1;
            // An older fetch still waiting sees the new generation and ends.
            slot.wake.notify_waiters();
            tokio::spawn(async move { fetch(conn, consumer_id, slot, gen, max, until).await });
        }
        Frame::Credit {
            consumer_id,
            credit,
        } => {
            if let Some(slot) = slot(conn, consumer_id) {
                let _ = slot
                    .credit
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |c| {
                        Some(c.saturating_add(credit))
                    });
                slot.wake.notify_waiters();
            }
        }
        Frame::Ack {
            consumer_id,
            offsets,
        } => {
            if let Some(slot) = slot(conn, consumer_id) {
                let mut c = slot.consumer.lock();
                c.ack(&offsets);
                if let Err(e) = c.save_if_due(Instant::now()) {
                    drop(c);
                    conn.error(u64::from(consumer_id), broker_code(&e), e.to_string());
                }
                // Room under max_inflight may let a push task go on.
                slot.wake.notify_waiters();
            }
        }
        Frame::ConsumerClose { consumer_id } => match conn.consumers.lock().remove(&consumer_id) {
            Some(slot) => slot.close(),
            None => unknown(conn, consumer_id),
        },
        _ => {}
    }
}

fn open(conn: &Arc<Conn>, request_id: u64, consumer: Consumer, push_credit: u32) {
    let next_offset = consumer.cursor();
    let slot = Arc::new(ConsumerSlot {
        consumer: Mutex::new(consumer),
        credit: AtomicU32::new(push_credit),
        wake: Notify::new(),
        closed: AtomicBool::new(false),
        fetch_gen: AtomicU64::new(0),
    });
    let id = {
        let mut map = conn.consumers.lock();
        let id = (1..=u32::MAX).find(|i| !map.contains_key(i)).unwrap_or(0);
        map.insert(id, slot.clone());
        id
    };
    conn.reply(&Frame::ConsumerOk {
        request_id,
        consumer_id: id,
        next_offset,
    });
    if push_credit > 0 {
        tokio::spawn(push(conn.clone(), id, slot));
    }
}

fn slot(conn: &Conn, id: u32) -> Option<Arc<ConsumerSlot>> {
    let found = conn.consumers.lock().get(&id).cloned();
    if found.is_none() {
        unknown(conn, id);
    }
    found
}

fn unknown(conn: &Conn, id: u32) {
    conn.error(
        u64::from(id),
        ErrorCode::UnknownConsumer,
        format!("no consumer {id} on this connection"),
    );
}

/// Polls under the lock, which is released before any wait.
fn poll(slot: &ConsumerSlot, max: usize) -> Result<Vec<Delivery>, fogline_broker::BrokerError> {
    slot.consumer.lock().poll(max, Instant::now())
}

/// Waits for a new record past the cursor or the next redelivery deadline. A consumer with
/// no room under `max_inflight` waits for the deadline only (an ack wakes its task): new
/// records would end the wait at once and the task would spin without yielding.
async fn wait_tail(slot: &ConsumerSlot, until: Instant) {
    let (stream, cursor, deadline, room) = {
        let c = slot.consumer.lock();
        let deadline = c.next_deadline().map_or(until, |d| d.min(until));
        (c.stream().clone(), c.cursor(), deadline, c.has_room())
    };
    if !room {
        tokio::time::sleep_until(deadline).await;
        return;
    }
    // A poll that read its byte budget without a match leaves records past the cursor,
    // so the wait below ends at once: give the other tasks their turn first.
    tokio::task::yield_now().await;
    let _ = tokio::time::timeout_at(deadline, stream.wait_past(cursor)).await;
}

async fn fetch(
    conn: Arc<Conn>,
    id: u32,
    slot: Arc<ConsumerSlot>,
    gen: u64,
    max: usize,
    until: Instant,
) {
    loop {
        // Registered before the checks below, so no wake-up is missed.
        let woken = slot.wake.notified();
        let closed = conn.closed.notified();
        tokio::pin!(woken, closed);
        woken.as_mut().enable();
        closed.as_mut().enable();
        if slot.is_closed() || conn.is_closing() {
            return;
        }
        if slot.fetch_gen.load(Ordering::Acquire) != gen {
            // Replaced by a newer fetch: answered at once, empty (one answer per Fetch).
            send(&conn, id, &[]);
            return;
        }
        match poll(&slot, max) {
            Ok(got) if !got.is_empty() || Instant::now() >= until => {
                send(&conn, id, &got);
                return;
            }
            Ok(_) => tokio::select! {
                _ = wait_tail(&slot, until) => {}
                _ = woken => {}
                _ = closed => {}
            },
            Err(e) => {
                conn.error(u64::from(id), broker_code(&e), e.to_string());
                return;
            }
        }
    }
}

async fn push(conn: Arc<Conn>, id: u32, slot: Arc<ConsumerSlot>) {
    loop {
        let woken = slot.wake.notified();
        let closed = conn.closed.notified();
        tokio::pin!(woken, closed);
        woken.as_mut().enable();
        closed.as_mut().enable();
        if slot.is_closed() || conn.is_closing() {
            return;
        }
        let credit = slot.credit.load(Ordering::Acquire) as usize;
        if credit == 0 {
            tokio::select! {
                _ = woken => {}
                _ = closed => {}
            }
            continue;
        }
        if conn.reply_backlog() > PUSH_BACKLOG {
            let drained = conn.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if conn.reply_backlog() > PUSH_BACKLOG {
                tokio::select! {
                    _ = drained => {}
                    _ = closed => {}
                }
            }
            continue;
        }
        match poll(&slot, credit.min(MAX_BATCH)) {
            Ok(got) if !got.is_empty() => {
                slot.credit.fetch_sub(got.len() as u32, Ordering::AcqRel);
                send(&conn, id, &got);
            }
            Ok(_) => tokio::select! {
                _ = wait_tail(&slot, Instant::now() + Duration::from_secs(3600)) => {}
                _ = woken => {}
                _ = closed => {}
            },
            Err(e) => {
                conn.error(u64::from(id), broker_code(&e), e.to_string());
                return;
            }
        }
    }
}

fn send(conn: &Conn, id: u32, got: &[Delivery]) {
    let bytes: usize = got
        .iter()
        .map(|d| d.record.topic.len() + d.record.headers.len() + d.record.payload.len())
        .sum();
    conn.client.count_out(got.len() as u64, bytes as u64);
    conn.reply_with(|buf| {
        let mut w = RecordsWriter::begin(buf, id);
        for d in got {
            let r = &d.record;
            let topic = std::str::from_utf8(&r.topic).unwrap_or("");
            w.push(
                buf,
                &StoredRecordRef {
                    offset: r.offset,
                    timestamp: r.timestamp,
                    delivery_count: d.delivery_count,
                    topic,
                    headers: &r.headers,
                    payload: &r.payload,
                },
            )?;
        }
        Ok::<(), fogline_wire::WireError>(())
    });
}
