//! Live subscriptions (at most once): [`Client::subscribe`] and [`Subscription`].

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use fogline_wire::{validate_filter, Frame};
use parking_lot::Mutex;
use tokio::sync::mpsc::{self, error::TryRecvError};

use crate::client::{unexpected, Client};
use crate::conn::flags;
use crate::error::ClientError;
use crate::options::{Message, SubscribeOptions};
use crate::reader::Lent;
use crate::shared::{Batch, Guard, Inner, SubEntry, SubShared};

impl Client {
    /// Subscribes to live records whose topic matches `filter` (MQTT `+`/`#`).
    /// Re-subscribed automatically after a reconnect.
    ///
    /// # Errors
    /// `InvalidFilter`; `Server` when refused; `Disconnected`, `Timeout`, `Closed`.
    pub async fn subscribe(
        &self,
        filter: &str,
        opts: SubscribeOptions,
    ) -> Result<Subscription, ClientError> {
        validate_filter(filter).map_err(ClientError::InvalidFilter)?;
        let inner = &self.inner;
        let sub_id = inner.next_sub.fetch_add(1, Ordering::Relaxed);
        let flags = flags(opts.priority);
        if let Some(i) = &opts.interest {
            fogline_profile::Interest::parse_terms(i)
                .map_err(|e| ClientError::InvalidInterest(e.to_string()))?;
        }
        let interest = opts.interest.filter(|i| !i.trim().is_empty());
        let shared = Arc::new(SubShared {
            sub_id,
            filter: filter.to_string(),
            interest,
            flags,
            capacity: opts.capacity.max(1),
            queued: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            confirmed: AtomicBool::new(false),
            room: tokio::sync::Notify::new(),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let error = Arc::new(Mutex::new(None));
        {
            let mut table = inner.table.lock();
            if !table.connected {
                return Err(inner.unavailable());
            }
            let entry = SubEntry {
                shared: shared.clone(),
                tx,
                error: error.clone(),
            };
            table.subs.insert(sub_id, entry);
        }
        let frame = shared.frame();
        // Dropped before the answer (a timeout around this future, a select): the entry goes,
        // and the server's subscription with it (see `Abandoned`).
        let mut abandoned = Abandoned {
            inner,
            sub_id,
            armed: true,
        };
        let answer = inner.call(u64::from(sub_id), &frame).await;
        abandoned.armed = false;
        match answer {
            Ok(Frame::SubOk { .. }) => Ok(Subscription {
                inner: inner.clone(),
                shared,
                rx,
                current: None,
                error,
                _guard: self.guard.clone(),
            }),
            Ok(other) => {
                inner.table.lock().remove_sub(sub_id);
                Err(unexpected(&other))
            }
            Err(e) => {
                inner.table.lock().remove_sub(sub_id);
                Err(e)
            }
        }
    }
}

/// Forgets a subscription whose `subscribe` future was dropped while it waited. Confirmed
/// already: it is unsubscribed here; not yet: the reader unsubscribes when the SubOk comes.
struct Abandoned<'a> {
    inner: &'a Arc<Inner>,
    sub_id: u32,
    armed: bool,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let live = {
            let mut table = self.inner.table.lock();
            table.requests.remove(&u64::from(self.sub_id));
            let entry = table.remove_sub(self.sub_id);
            entry.is_some_and(|e| e.shared.confirmed.load(Ordering::Acquire)) && table.connected
        };
        if live {
            let _ = self.inner.send_control(&Frame::Unsubscribe {
                sub_id: self.sub_id,
            });
        }
    }
}

/// A live subscription; dropping it unsubscribes.
///
/// Records are buffered up to `SubscribeOptions::capacity`; past that the
/// client stops reading the socket until the application catches up, so the
/// server's slow-consumer policy (block, drop-oldest or disconnect) decides
/// what happens, and nothing is dropped silently here. While it waits, nothing
/// else of this client is read either (acks, replies, other subscriptions): a
/// task that drains a subscription must not wait on this client's acks or
/// replies in between, or it waits for itself. Drain from a task of its own,
/// or publish through another [`Client`](crate::Client).
pub struct Subscription {
    inner: Arc<Inner>,
    shared: Arc<SubShared>,
    rx: mpsc::UnboundedReceiver<Batch>,
    current: Option<Batch>,
    error: Arc<Mutex<Option<ClientError>>>,
    _guard: Arc<Guard>,
}

impl Subscription {
    /// The next record; `None` once the subscription ended (the server
    /// refused it later, e.g. `SlowConsumer`, see [`Subscription::take_error`],
    /// or the client closed).
    ///
    /// With nothing queued, it waits for the socket itself and reads whatever comes (for
    /// any subscription, request or consumer of this client), so its task is woken by the
    /// record rather than after the reader task (see `reader`). Cancel-safe: what it read
    /// was dispatched before it could be dropped.
    pub async fn recv(&mut self) -> Option<Message> {
        loop {
            if let Some(m) = self.next_queued() {
                return Some(m);
            }
            match self.rx.try_recv() {
                Ok(batch) => {
                    self.current = Some(batch);
                    continue;
                }
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => {}
            }
            let Some(incoming) = self.direct_read() else {
                self.current = Some(self.rx.recv().await?);
                continue;
            };
            let read = {
                let closed = incoming.on_close();
                tokio::pin!(closed);
                closed.as_mut().enable();
                if incoming.is_over() {
                    continue;
                }
                tokio::select! {
                    biased;
                    batch = self.rx.recv() => {
                        self.current = Some(batch?);
                        continue;
                    }
                    ready = incoming.sock.readable() => match ready {
                        Ok(()) => incoming.pump(&self.inner),
                        Err(e) => {
                            incoming.fail(e);
                            false
                        }
                    },
                    () = closed => continue,
                }
            };
            drop(incoming); // the next `recv` of any subscription may wait for the socket
            if !read {
                // Refused (a subscription is full, or the connection ended): the
                // readiness is still set, so waiting for it again would spin.
                self.current = Some(self.rx.recv().await?);
                continue;
            }
            // Readiness and non-blocking reads do not count against tokio's budget.
            tokio::task::coop::consume_budget().await;
        }
    }

    /// The connection's read side, when this task may wait for it: connected, and no other
    /// `recv` waiting for it. (While a subscription is full, `pump` refuses to read.)
    fn direct_read(&self) -> Option<Lent> {
        let incoming = self.inner.incoming.lock().clone()?;
        if incoming.is_over() {
            return None;
        }
        incoming.lend()
    }

    fn next_queued(&mut self) -> Option<Message> {
        let batch = self.current.as_mut()?;
        let record = batch.records.pop_front()?;
        let before = self.shared.queued.fetch_sub(1, Ordering::AcqRel);
        if before > self.shared.capacity && before - 1 <= self.shared.capacity {
            self.shared.room.notify_one();
        }
        let timestamp = if record.timestamp == 0 {
            batch.batch_timestamp
        } else {
            record.timestamp
        };
        Some(Message {
            topic: batch.topic.clone(),
            headers: record.headers,
            payload: record.payload,
            timestamp,
            priority: batch.priority,
        })
    }

    /// Records lost so far: dropped by the server's drop-oldest policy
    /// (reported in Deliver frames).
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// The subscription id on the wire.
    pub fn sub_id(&self) -> u32 {
        self.shared.sub_id
    }

    /// The server error that ended the subscription, if any.
    pub fn take_error(&self) -> Option<ClientError> {
        self.error.lock().take()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let sub_id = self.shared.sub_id;
        let was_live = {
            let mut table = self.inner.table.lock();
            table.remove_sub(sub_id).is_some() && table.connected
        };
        // (`remove_sub` woke the reader if it waited for this subscription's room.)
        if was_live {
            let _ = self.inner.send_control(&Frame::Unsubscribe { sub_id });
        }
    }
}
