//! Acknowledged batches of one connection that wait for `fsync` durability, in arrival order.
//!
//! A client pipelines acked batches (fogline-client keeps up to 64 in flight, an MQTT client
//! up to its receive maximum). If a connection waited for each batch's flush before reading
//! the next, it would get one `msync` per batch. Instead it stores each batch as it arrives
//! ([`Broker::store_acked`](crate::Broker::store_acked)), keeps reading, and queues it here;
//! one flush then covers many of them, and the connection delivers and acknowledges them in
//! order as they become durable. A protocol keeps its order with everything else by
//! answering all of them before it handles anything other than an acked publish.

use std::collections::VecDeque;

use crate::broker::Stored;
use crate::error::BrokerError;

/// Most batches waiting at once: a connection stops reading while it is reached.
const MAX_BATCHES: usize = 256;
/// Most bytes of records waiting at once.
const MAX_BYTES: usize = 32 << 20;

/// The acked batches a connection has stored and not yet answered; `T` is what the protocol
/// needs for the answer (a request id, a packet id).
pub struct AckQueue<T> {
    waiting: VecDeque<(T, Result<Stored, BrokerError>)>,
    bytes: usize,
}

impl<T> Default for AckQueue<T> {
    fn default() -> Self {
        AckQueue {
            waiting: VecDeque::new(),
            bytes: 0,
        }
    }
}

impl<T> AckQueue<T> {
    /// Nothing waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// How many waiting batches' tags satisfy `f`.
    pub fn count(&self, f: impl Fn(&T) -> bool) -> usize {
        self.waiting.iter().filter(|(t, _)| f(t)).count()
    }

    /// The connection should wait for the oldest batch before it reads more.
    pub fn is_full(&self) -> bool {
        self.waiting.len() >= MAX_BATCHES || self.bytes >= MAX_BYTES
    }

    /// Queues a stored batch (or why it could not be stored). When nothing waits before it
    /// and it needs no waiting, it is handed back to be answered at once.
    pub fn push(
        &mut self,
        tag: T,
        stored: Result<Stored, BrokerError>,
    ) -> Option<(T, Result<Stored, BrokerError>)> {
        if self.waiting.is_empty() {
            if let Some(state) = answerable(&stored) {
                return Some((tag, settle(stored, state)));
            }
        }
        if let Ok(s) = &stored {
            self.bytes += s.weight();
        }
        self.waiting.push_back((tag, stored));
        None
    }

    /// Waits until the oldest batch can be answered (durable, or its flush failed); pending
    /// forever when nothing waits. Cancel-safe: it only waits.
    pub async fn oldest_ready(&self) {
        match self.waiting.front() {
            Some((_, Ok(s))) => {
                let _ = s.durable().await;
            }
            Some((_, Err(_))) => {}
            None => std::future::pending().await,
        }
    }

    /// The oldest batch, if it can be answered now: `Ok` when durable (deliver it, then
    /// acknowledge), `Err` when it must be refused.
    pub fn pop_ready(&mut self) -> Option<(T, Result<Stored, BrokerError>)> {
        let state = answerable(&self.waiting.front()?.1)?;
        let (tag, stored) = self.waiting.pop_front()?;
        if let Ok(s) = &stored {
            self.bytes -= s.weight();
        }
        Some((tag, settle(stored, state)))
    }
}

/// `Some` when the batch can be answered now: with `Err` when its flush failed.
fn answerable(stored: &Result<Stored, BrokerError>) -> Option<Result<(), BrokerError>> {
    match stored {
        Ok(s) => s.durable_state(),
        Err(_) => Some(Ok(())),
    }
}

/// The answer: the stored batch, or why it must be refused.
fn settle(
    stored: Result<Stored, BrokerError>,
    state: Result<(), BrokerError>,
) -> Result<Stored, BrokerError> {
    stored.and_then(|s| state.map(|()| s))
}
