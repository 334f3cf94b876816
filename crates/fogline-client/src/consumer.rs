//! Durable and ephemeral consumers on streams (at least once):
//! [`Client::consumer`] and [`Consumer`].

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fogline_wire::{validate_filter, Frame, StartPosition, StoredBlock};
use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};

use crate::client::Client;
use crate::error::ClientError;
use crate::options::{ConsumerOptions, StoredMessage};
use crate::shared::{ConsumerEntry, ConsumerShared, Guard, Inner, Pending, Pushed};

/// Most offsets in one Ack frame.
const ACK_CHUNK: usize = 8192;

pub(crate) fn open_frame(
    request_id: u64,
    stream: &str,
    opts: &ConsumerOptions,
    start: StartPosition,
) -> Frame {
    let ack_timeout_ms = opts.ack_timeout.map_or(0, |d| {
        u32::try_from(d.as_millis()).unwrap_or(u32::MAX).max(1)
    });
    Frame::ConsumerOpen {
        request_id,
        stream: stream.into(),
        name: opts.name.as_str().into(),
        filter: opts.filter.as_str().into(),
        start,
        ack_timeout_ms,
        max_inflight: opts.max_inflight,
        push_credit: opts.push_credit,
    }
}

impl Client {
    /// Opens a consumer on `stream`. After a reconnect it is re-opened: a
    /// durable one (named) resumes from its acked position, an ephemeral one
    /// from the offset after the last record it received.
    ///
    /// # Errors
    /// `InvalidFilter`; `Server` (e.g. `UnknownStream`, `Duplicate`);
    /// `Disconnected`, `Timeout`, `Closed`.
    pub async fn consumer(
        &self,
        stream: &str,
        opts: ConsumerOptions,
    ) -> Result<Consumer, ClientError> {
        if !opts.filter.is_empty() {
            validate_filter(&opts.filter).map_err(ClientError::InvalidFilter)?;
        }
        let inner = &self.inner;
        let local = inner.request_id();
        let push = opts.push_credit > 0;
        let start = opts.start;
        let shared = Arc::new(ConsumerShared {
            local,
            stream: stream.to_string(),
            opts,
            server_id: AtomicU32::new(0),
            next_offset: AtomicU64::new(0),
            ready: AtomicBool::new(false),
            opened: AtomicBool::new(false),
            fetch: Mutex::new(None),
            early: Mutex::new(Default::default()),
            error: Mutex::new(None),
        });
        let (push_tx, push_rx) = if push {
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        {
            let mut table = inner.table.lock();
            if !table.connected {
                return Err(inner.unavailable());
            }
            let entry = ConsumerEntry {
                shared: shared.clone(),
                push_tx,
            };
            table.consumers.insert(local, entry);
        }
        let id = inner.request_id();
        let (tx, rx) = oneshot::channel();
        let frame = open_frame(id, stream, &shared.opts, start);
        // Dropped before the answer (a timeout around this future, a select): the entry goes,
        // and the server's consumer with it (see `Abandoned`).
        let mut abandoned = Abandoned {
            inner,
            local,
            request: id,
            armed: true,
        };
        let opened = match inner.request(
            id,
            Pending::Open {
                local,
                reply: Some(tx),
            },
            &frame,
        ) {
            Ok(()) => match tokio::time::timeout(inner.opts.request_timeout, rx).await {
                Ok(Ok(result)) => result,
                Ok(Err(_)) => Err(inner.unavailable()),
                Err(_) => {
                    inner.table.lock().requests.remove(&id);
                    Err(ClientError::Timeout)
                }
            },
            Err(e) => Err(e),
        };
        abandoned.armed = false;
        if let Err(e) = opened {
            inner.table.lock().consumers.remove(&local);
            return Err(e);
        }
        Ok(Consumer {
            inner: inner.clone(),
            shared,
            push_rx,
            current: StoredBlock::default(),
            current_epoch: 0,
            consumed: 0,
            _guard: self.guard.clone(),
        })
    }
}

/// Forgets a consumer whose `consumer` future was dropped while it waited. Opened already:
/// it is closed here; not yet: the reader closes it when the ConsumerOk comes.
struct Abandoned<'a> {
    inner: &'a Arc<Inner>,
    local: u64,
    request: u64,
    armed: bool,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let opened = {
            let mut table = self.inner.table.lock();
            table.requests.remove(&self.request);
            let entry = table.consumers.remove(&self.local);
            let id = entry
                .filter(|e| e.shared.ready.load(Ordering::Acquire))
                .map(|e| e.shared.server_id.load(Ordering::Acquire));
            if let Some(id) = id {
                table.by_server.remove(&id);
            }
            id.filter(|_| table.connected)
        };
        if let Some(consumer_id) = opened {
            let _ = self
                .inner
                .send_control(&Frame::ConsumerClose { consumer_id });
        }
    }
}

/// A consumer: pull with [`Consumer::fetch`] (when `push_credit` is 0) or
/// receive pushed records with [`Consumer::recv`]. Dropping it closes it.
pub struct Consumer {
    inner: Arc<Inner>,
    shared: Arc<ConsumerShared>,
    push_rx: Option<mpsc::UnboundedReceiver<Pushed>>,
    current: StoredBlock,
    /// Connection epoch `current` arrived on.
    current_epoch: u64,
    /// Records consumed on the current connection since the last Credit.
    consumed: u32,
    _guard: Arc<Guard>,
}

impl Consumer {
    /// The server's id for this consumer on the current connection.
    pub fn consumer_id(&self) -> u32 {
        self.shared.server_id.load(Ordering::Acquire)
    }

    /// The offset after the last record received (or the server's
    /// `next_offset` at open).
    pub fn next_offset(&self) -> u64 {
        self.shared.next_offset.load(Ordering::Acquire)
    }

    /// Fetches up to `max` records, waiting up to `wait` for the first.
    /// An empty vector means nothing arrived in time.
    ///
    /// # Errors
    /// `Usage` on a push consumer; `Server`; `Disconnected`, `Timeout`, `Closed`.
    pub async fn fetch(
        &mut self,
        max: u32,
        wait: Duration,
    ) -> Result<Vec<StoredMessage>, ClientError> {
        if self.push_rx.is_some() {
            return Err(ClientError::Usage("fetch on a push consumer; use recv"));
        }
        if let Some(records) = self.take_early(max) {
            return Ok(records);
        }
        let inner = &self.inner;
        let (tx, rx) = oneshot::channel();
        let consumer_id = {
            let _table = inner.table.lock();
            if !self.shared.ready.load(Ordering::Acquire) {
                return Err(self.not_ready());
            }
            *self.shared.fetch.lock() = Some(tx);
            self.consumer_id()
        };
        let wait_ms = u32::try_from(wait.as_millis()).unwrap_or(u32::MAX);
        inner.send_control(&Frame::Fetch {
            consumer_id,
            max_records: max,
            max_wait_ms: wait_ms,
        })?;
        let limit = wait.saturating_add(inner.opts.request_timeout);
        let block = match tokio::time::timeout(limit, rx).await {
            Ok(Ok(result)) => result?,
            Ok(Err(_)) => return Err(inner.unavailable()),
            Err(_) => {
                self.shared.fetch.lock().take();
                return Err(ClientError::Timeout);
            }
        };
        let records: Vec<StoredMessage> = block.iter().collect();
        if let Some(last) = records.last() {
            self.shared
                .next_offset
                .fetch_max(last.offset.saturating_add(1), Ordering::AcqRel);
        }
        Ok(records)
    }

    /// Up to `max` records of an answer that came when no fetch waited (see
    /// `ConsumerShared::early`).
    fn take_early(&self, max: u32) -> Option<Vec<StoredMessage>> {
        let mut early = self.shared.early.lock();
        let block = early.front_mut()?;
        let mut out = Vec::new();
        while out.len() < max.max(1) as usize {
            match block.pop_front() {
                Some(r) => out.push(r),
                None => break,
            }
        }
        if block.is_empty() {
            early.pop_front();
        }
        Some(out)
    }

    /// Acknowledges processed offsets (needed unless `ack_timeout` is
    /// `None`); unacked records are redelivered after the ack timeout.
    ///
    /// # Errors
    /// `Disconnected` (the records will be redelivered), `Closed`.
    pub fn ack(&self, offsets: &[u64]) -> Result<(), ClientError> {
        if !self.shared.ready.load(Ordering::Acquire) {
            return Err(self.not_ready());
        }
        for chunk in offsets.chunks(ACK_CHUNK) {
            self.inner.send_control(&Frame::Ack {
                consumer_id: self.consumer_id(),
                offsets: chunk.to_vec(),
            })?;
        }
        Ok(())
    }

    /// The next pushed record (push mode). Credit is topped up as records
    /// are consumed: each time half of `push_credit` has been taken.
    ///
    /// # Errors
    /// `Usage` on a pull consumer; `Server` when the server ends the
    /// consumer; `Closed`/`Disconnected` once the client is finished.
    pub async fn recv(&mut self) -> Result<StoredMessage, ClientError> {
        loop {
            if let Some(record) = self.current.pop_front() {
                self.consumed_one(record.offset);
                return Ok(record);
            }
            let Some(rx) = self.push_rx.as_mut() else {
                return Err(ClientError::Usage("recv on a pull consumer; use fetch"));
            };
            match rx.recv().await {
                Some(Ok((epoch, block))) => {
                    self.current = block;
                    self.current_epoch = epoch;
                }
                Some(Err(e)) => return Err(e),
                None => return Err(self.not_ready()),
            }
        }
    }

    /// Why the consumer cannot be used now: the server's refusal to
    /// re-open it (for good: a refused consumer is not re-opened again),
    /// else the connection state.
    fn not_ready(&self) -> ClientError {
        match &*self.shared.error.lock() {
            Some(ClientError::Server { code, message }) => ClientError::Server {
                code: *code,
                message: message.clone(),
            },
            _ => self.inner.unavailable(),
        }
    }

    fn consumed_one(&mut self, offset: u64) {
        self.shared
            .next_offset
            .fetch_max(offset.saturating_add(1), Ordering::AcqRel);
        // Records from an older connection were credited by that one.
        if self.current_epoch != self.inner.epoch.load(Ordering::Acquire) {
            self.consumed = 0;
            return;
        }
        self.consumed += 1;
        let threshold = (self.shared.opts.push_credit / 2).max(1);
        if self.consumed >= threshold && self.shared.ready.load(Ordering::Acquire) {
            let frame = Frame::Credit {
                consumer_id: self.consumer_id(),
                credit: self.consumed,
            };
            if self.inner.send_control(&frame).is_ok() {
                self.consumed = 0;
            }
        }
    }

    /// Closes the consumer on the server.
    ///
    /// # Errors
    /// `Disconnected`, `Closed` (the server forgets it with the connection anyway).
    pub fn close(self) -> Result<(), ClientError> {
        self.close_inner()
    }

    fn close_inner(&self) -> Result<(), ClientError> {
        let was_ready = {
            let mut table = self.inner.table.lock();
            let entry = table.consumers.remove(&self.shared.local);
            let ready = self.shared.ready.swap(false, Ordering::AcqRel);
            if entry.is_some() && ready {
                table.by_server.remove(&self.consumer_id());
            }
            entry.is_some() && ready && table.connected
        };
        if was_ready {
            self.inner.send_control(&Frame::ConsumerClose {
                consumer_id: self.consumer_id(),
            })
        } else {
            Ok(())
        }
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        let _ = self.close_inner();
    }
}
