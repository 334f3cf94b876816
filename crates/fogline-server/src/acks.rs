//! Acked publishes of one connection that wait for `fsync` durability, in arrival order.
//!
//! A client pipelines acked batches (fogline-client keeps up to 64 in flight). If the reader
//! waited for each batch's flush before reading the next, one connection would get one
//! `msync` per batch. Instead the reader stores each batch as it arrives and keeps reading;
//! the flusher then covers all of them at once, and the batches are delivered and
//! acknowledged here in the order they came, each once it is durable.
//!
//! Order with everything else is kept by draining first: any frame other than an acked
//! Publish waits until the pipeline is empty, so a later fire-and-forget record, a Subscribe
//! or a consumer's request never overtakes an earlier acked batch.

use std::collections::VecDeque;
use std::sync::Arc;

use fogline_broker::{BrokerError, Handoff, Stored};
use fogline_wire::Frame;

use crate::connection::Conn;
use crate::errors::broker_code;

/// Most batches waiting at once; the reader stops reading while it is reached.
const MAX_BATCHES: usize = 256;
/// Most bytes of records waiting at once.
const MAX_BYTES: usize = 32 << 20;

struct Waiting {
    request_id: u64,
    /// The stored batch, or why it could not be stored (answered in turn).
    stored: Result<Stored, BrokerError>,
}

/// The acked batches a connection has stored and not yet answered.
#[derive(Default)]
pub(crate) struct Pipeline {
    waiting: VecDeque<Waiting>,
    bytes: usize,
}

impl Pipeline {
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// The reader should wait for the oldest batch before it reads more.
    pub fn is_full(&self) -> bool {
        self.waiting.len() >= MAX_BATCHES || self.bytes >= MAX_BYTES
    }

    /// Answers an acked batch: at once when nothing waits before it and it is durable,
    /// otherwise in turn.
    pub async fn push(
        &mut self,
        conn: &Arc<Conn>,
        request_id: u64,
        stored: Result<Stored, BrokerError>,
        handoff: Handoff,
    ) {
        let ready = match &stored {
            Ok(s) => s.is_durable(),
            Err(_) => true,
        };
        if ready && self.waiting.is_empty() {
            answer(conn, request_id, stored, handoff).await;
            return;
        }
        if let Ok(s) = &stored {
            self.bytes += s.weight();
        }
        self.waiting.push_back(Waiting { request_id, stored });
    }

    /// Waits until the oldest batch is durable (or its flush failed); pending forever when
    /// nothing waits. Cancel-safe: it only waits.
    pub async fn oldest_ready(&self) {
        match self.waiting.front() {
            Some(Waiting { stored: Ok(s), .. }) => {
                let _ = s.durable().await;
            }
            Some(Waiting { stored: Err(_), .. }) => {}
            None => std::future::pending().await,
        }
    }

    /// Answers the oldest batch, waiting for it if needed, then every later one that is
    /// already durable.
    pub async fn answer_ready(&mut self, conn: &Arc<Conn>) {
        let mut first = true;
        while let Some(w) = self.waiting.front() {
            let ready = match &w.stored {
                Ok(s) => first || s.is_durable(),
                Err(_) => true,
            };
            if !ready {
                break;
            }
            first = false;
            let Some(w) = self.waiting.pop_front() else {
                break;
            };
            if let Ok(s) = &w.stored {
                self.bytes -= s.weight();
            }
            let handoff = if self.waiting.is_empty() {
                Handoff::Direct
            } else {
                Handoff::Queue
            };
            answer(conn, w.request_id, w.stored, handoff).await;
        }
    }

    /// Answers every waiting batch, in order.
    pub async fn drain(&mut self, conn: &Arc<Conn>) {
        while !self.waiting.is_empty() {
            self.answer_ready(conn).await;
        }
    }
}

/// Waits for durability, then delivers and acknowledges; or reports the error.
async fn answer(
    conn: &Arc<Conn>,
    request_id: u64,
    stored: Result<Stored, BrokerError>,
    handoff: Handoff,
) {
    let stored = match stored {
        Ok(s) => s.durable().await.map(|()| s),
        Err(e) => Err(e),
    };
    match stored {
        Ok(s) => {
            let count = s.count();
            conn.broker.deliver(s, handoff).await;
            conn.reply(&Frame::PubAck { request_id, count });
        }
        Err(e) => conn.error(request_id, broker_code(&e), e.to_string()),
    }
}
