//! Publishing: fire-and-forget, acked (with a future each) and tracked
//! (acked, failures reported by `flush`), all encoded straight into the
//! outbox.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll};

use tokio::sync::oneshot;

use crate::client::Client;
use crate::conn::flags;
use crate::error::ClientError;
use crate::options::PublishRecord;
use crate::outbox::{RecordIn, PUBLISH_OVERHEAD, RECORD_OVERHEAD};
use crate::shared::{Pending, DEAD};

impl Client {
    /// Publishes one record, fire-and-forget (at most once). Returns once
    /// the record is queued; waits only while the buffer is full.
    ///
    /// # Errors
    /// `InvalidTopic`, `MessageTooLarge`, or `Closed`/`Disconnected` once
    /// the client is finished.
    pub async fn publish(&self, topic: &str, payload: impl AsRef<[u8]>) -> Result<(), ClientError> {
        let rec = RecordIn {
            topic,
            flags: 0,
            timestamp: 0,
            headers: b"",
            payload: payload.as_ref(),
        };
        self.enqueue(&rec, None).await.map(|_| ())
    }

    /// Publishes one record with headers, timestamp and priority,
    /// fire-and-forget.
    ///
    /// # Errors
    /// As [`Client::publish`].
    pub async fn publish_with(&self, record: &PublishRecord) -> Result<(), ClientError> {
        self.enqueue(&record_in(record), None).await.map(|_| ())
    }

    /// Publishes one record and waits for the server's acknowledgement.
    ///
    /// # Errors
    /// As [`Client::publish`], plus `Server` when the server refuses the
    /// batch and `Disconnected` when the connection drops after the record
    /// was sent (it may or may not have been stored: retry for at least once).
    pub async fn publish_acked(&self, record: &PublishRecord) -> Result<(), ClientError> {
        self.send_acked(record).await?.await
    }

    /// Queues an acked record and returns a future for its acknowledgement,
    /// so many can be outstanding (pipelining). Waits while
    /// `max_inflight_acks` acked batches are unanswered or the buffer is full.
    /// Acked records queued together for one topic share one Publish frame.
    /// When a lost connection fails one with `Disconnected`, every acked
    /// record not yet sent fails with it: publishing the failed ones again,
    /// in order, before any newer one, keeps their order (see the crate's
    /// delivery notes).
    ///
    /// # Errors
    /// As [`Client::publish`].
    pub async fn send_acked(&self, record: &PublishRecord) -> Result<AckFuture, ClientError> {
        let (tx, rx) = oneshot::channel();
        let mut ack = AckParts {
            slot: None,
            tx: Some(tx),
        };
        self.enqueue(&record_in(record), Some(&mut ack)).await?;
        Ok(AckFuture(rx))
    }

    /// Queues a record in an acked batch without a future of its own: the
    /// cheapest way to pipeline at-least-once publishing. Waits while
    /// `max_inflight_acks` acked batches are unanswered or the buffer is full.
    /// [`Client::flush`] waits for the acks and reports the first failure
    /// since the previous flush (then republish what followed the last
    /// successful flush).
    ///
    /// # Errors
    /// As [`Client::publish`].
    pub async fn publish_tracked(&self, record: &PublishRecord) -> Result<(), ClientError> {
        let mut ack = AckParts {
            slot: None,
            tx: None,
        };
        self.enqueue(&record_in(record), Some(&mut ack)).await
    }

    fn check_size(&self, rec: &RecordIn<'_>) -> Result<(), ClientError> {
        let size = rec.headers.len() + rec.payload.len();
        let max = self.inner.max_message.load(Ordering::Relaxed);
        if size > max as usize {
            return Err(ClientError::MessageTooLarge { size, max });
        }
        let frame = PUBLISH_OVERHEAD - 4 + rec.topic.len() + RECORD_OVERHEAD + size;
        let max_frame = self.inner.max_frame.load(Ordering::Relaxed);
        if frame > max_frame as usize {
            return Err(ClientError::MessageTooLarge {
                size,
                max: max_frame,
            });
        }
        Ok(())
    }

    fn batch_cap(&self) -> usize {
        let max_frame = self.inner.max_frame.load(Ordering::Relaxed) as usize;
        self.inner
            .opts
            .max_batch_bytes
            .min(max_frame.saturating_add(4))
    }

    /// Appends a record to the outbox, waiting for room (and, for an acked
    /// record that needs a new frame, for an ack slot). An acked record's
    /// waiter is registered before the writer can see its frame.
    async fn enqueue(
        &self,
        rec: &RecordIn<'_>,
        mut ack: Option<&mut AckParts>,
    ) -> Result<(), ClientError> {
        self.check_size(rec)?;
        let inner = &self.inner;
        let cap = self.batch_cap();
        let bound = inner.opts.max_buffered_bytes;
        loop {
            // Fast path: one lock, no allocation, no await.
            match self.try_push(rec, &mut ack, cap, bound) {
                Attempt::Done(result) => return result,
                Attempt::NeedSlot => {
                    let slot = inner.ack_slots.clone().acquire_owned().await;
                    let slot = slot.map_err(|_| ClientError::Closed)?;
                    if let Some(parts) = ack.as_mut() {
                        parts.slot = Some(slot);
                    }
                }
                Attempt::Full => {
                    let notified = inner.space.notified();
                    tokio::pin!(notified);
                    notified.as_mut().enable();
                    let full = inner.outbox.lock().publish_bytes() >= bound;
                    if full && inner.state() != DEAD {
                        notified.await;
                    }
                }
            }
        }
    }

    fn try_push(
        &self,
        rec: &RecordIn<'_>,
        ack: &mut Option<&mut AckParts>,
        cap: usize,
        bound: usize,
    ) -> Attempt {
        let inner = &self.inner;
        let mut outbox = inner.outbox.lock();
        if inner.state() == DEAD {
            return Attempt::Done(Err(inner.unavailable()));
        }
        let queued = outbox.publish_bytes();
        if queued >= bound && queued > 0 {
            return Attempt::Full;
        }
        let acked = ack.is_some();
        if let Some(parts) = ack.as_mut() {
            // A slot is needed only for a new frame: take one without
            // waiting if free, else wait for one outside the lock.
            if parts.slot.is_none() && !outbox.would_join(rec, true, cap) {
                match inner.ack_slots.clone().try_acquire_owned() {
                    Ok(slot) => parts.slot = Some(slot),
                    Err(_) => return Attempt::NeedSlot,
                }
            }
        }
        let pushed = match outbox.push(rec, acked, || inner.request_id(), cap) {
            Ok(p) => p,
            Err(e) => return Attempt::Done(Err(e)),
        };
        if let Some(parts) = ack.as_mut() {
            let tx = parts.tx.take();
            let mut table = inner.table.lock();
            match table.requests.get_mut(&pushed.request_id) {
                Some(Pending::Acks {
                    waiters,
                    tracked,
                    end,
                    ..
                }) if !pushed.new_frame => {
                    match tx {
                        Some(tx) => waiters.push(tx),
                        None => *tracked = tracked.saturating_add(1),
                    }
                    *end = pushed.end;
                }
                _ => match parts.slot.take() {
                    Some(slot) => {
                        let tracked = u32::from(tx.is_none());
                        let pending = Pending::Acks {
                            waiters: tx.into_iter().collect(),
                            tracked,
                            end: pushed.end,
                            _slot: slot,
                        };
                        table.requests.insert(pushed.request_id, pending);
                    }
                    None => {
                        // Cannot happen: a new frame always has a slot.
                        if let Some(tx) = tx {
                            let _ = tx.send(Err(ClientError::Disconnected));
                        }
                    }
                },
            }
        }
        // With the writer idle, write now on this task (see `outbox`).
        let direct = if pushed.was_empty {
            outbox.write_now()
        } else {
            None
        };
        drop(outbox);
        if pushed.was_empty {
            // After a direct write too: it takes its socket back, and sends
            // the rest of a partial write.
            inner.writer_wake.notify_one();
        }
        if direct == Some(true) {
            inner.progress.notify_waiters();
        }
        Attempt::Done(Ok(()))
    }
}

/// What one try to append a record came to.
enum Attempt {
    Done(Result<(), ClientError>),
    /// The buffer is full: wait for the writer.
    Full,
    /// An acked record needs a new frame and no ack slot is free.
    NeedSlot,
}

/// An acked record's ack slot (taken when it needs a new frame) and,
/// unless the record is tracked, its waiter.
struct AckParts {
    slot: Option<tokio::sync::OwnedSemaphorePermit>,
    tx: Option<oneshot::Sender<Result<(), ClientError>>>,
}

fn record_in(r: &PublishRecord) -> RecordIn<'_> {
    RecordIn {
        topic: &r.topic,
        flags: flags(r.priority),
        timestamp: r.timestamp.unwrap_or(0),
        headers: &r.headers,
        payload: &r.payload,
    }
}

/// Resolves when the server acknowledges an acked publish.
///
/// Output: `Ok(())` once stored; `Server` when refused; `Disconnected` when
/// the connection dropped after it was sent; `Closed` when the client ended.
pub struct AckFuture(oneshot::Receiver<Result<(), ClientError>>);

impl Future for AckFuture {
    type Output = Result<(), ClientError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0)
            .poll(cx)
            .map(|r| r.unwrap_or(Err(ClientError::Disconnected)))
    }
}
