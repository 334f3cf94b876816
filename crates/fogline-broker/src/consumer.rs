//! Durable consumers: cursors on a stream with acks and redelivery.
//!
//! A consumer reads new records from `cursor` on. With acks on, each record
//! handed out waits in `pending` until acked; one not acked within the ack
//! timeout is handed out again (at least once). The acknowledged floor is the
//! lowest pending offset, or the cursor when nothing is pending: every record
//! below it was acked or filtered out, so a durable consumer resumes there.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fogline_log::{LogError, Record};
use tokio::time::Instant;

use crate::error::BrokerError;
use crate::stream::Stream;

/// Where a new consumer starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// The oldest retained record.
    Earliest,
    /// Only records committed after opening.
    Latest,
    /// This offset (clamped to what is retained).
    Offset(u64),
    /// The first record at or after this time (microseconds since the epoch).
    Time(u64),
    /// The stored position of a durable consumer; earliest when none.
    Resume,
}

/// How to open a consumer.
#[derive(Clone, Debug)]
pub struct ConsumerOptions {
    /// Durable name (position kept by the server); `None` = ephemeral.
    pub name: Option<String>,
    /// Only records whose topic matches this filter.
    pub filter: Option<String>,
    /// Start position.
    pub start: Start,
    /// Redeliver records not acked within this; `None` = no acks needed.
    pub ack_timeout: Option<Duration>,
    /// Most records handed out and not yet acked.
    pub max_inflight: usize,
}

/// A record handed to a consumer.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// The stored record.
    pub record: Record,
    /// 1 on first delivery, then counting redeliveries.
    pub delivery_count: u16,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    deadline: Instant,
    deliveries: u16,
}

/// One open consumer; owned by the connection that opened it.
pub struct Consumer {
    stream: Arc<Stream>,
    name: Option<String>,
    filter: Option<String>,
    cursor: u64,
    pending: BTreeMap<u64, Pending>,
    ack_timeout: Option<Duration>,
    max_inflight: usize,
    stored_floor: Option<u64>,
    saved_at: Option<Instant>,
}

/// Least time between two position writes caused by acks (a write is a
/// file create and rename; closing the consumer always writes).
const SAVE_INTERVAL: Duration = Duration::from_millis(100);

/// Bytes read from the log per poll, so one fetch stays bounded.
const READ_BYTES: usize = 4 << 20;

impl Consumer {
    pub(crate) fn open(
        stream: Arc<Stream>,
        opts: ConsumerOptions,
    ) -> Result<Consumer, BrokerError> {
        if let Some(f) = &opts.filter {
            fogline_wire::validate_filter(f)
                .map_err(|e| BrokerError::InvalidFilter(e.to_string()))?;
        }
        let stored = match &opts.name {
            Some(name) => stream.claim_durable(name)?,
            None => None,
        };
        let (first, next) = stream.bounds();
        let cursor = match opts.start {
            Start::Earliest => first,
            Start::Latest => next,
            Start::Offset(o) => o.clamp(first, next),
            Start::Time(t) => stream.offset_for_time(t),
            Start::Resume => stored.unwrap_or(first).clamp(first, next),
        };
        Ok(Consumer {
            stream,
            name: opts.name,
            filter: opts.filter,
            cursor,
            pending: BTreeMap::new(),
            ack_timeout: opts.ack_timeout,
            max_inflight: opts.max_inflight.max(1),
            stored_floor: stored,
            saved_at: None,
        })
    }

    /// The stream this consumer reads.
    pub fn stream(&self) -> &Arc<Stream> {
        &self.stream
    }

    /// The next new offset it will read.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    /// Every record below this offset was acked (or filtered out).
    pub fn floor(&self) -> u64 {
        self.pending.keys().next().copied().unwrap_or(self.cursor)
    }

    /// Records handed out and not yet acked.
    pub fn inflight(&self) -> usize {
        self.pending.len()
    }

    /// Hands out up to `max` records: expired ones again first, then new ones.
    ///
    /// # Errors
    /// [`BrokerError::Storage`] when the log cannot be read.
    pub fn poll(&mut self, max: usize, now: Instant) -> Result<Vec<Delivery>, BrokerError> {
        let mut out = Vec::new();
        self.redeliver(max, now, &mut out)?;
        let room = match self.ack_timeout {
            Some(_) => self.max_inflight.saturating_sub(self.pending.len()),
            None => usize::MAX,
        };
        let want = max.saturating_sub(out.len()).min(room);
        if want > 0 {
            self.read_new(want, now, &mut out)?;
        }
        Ok(out)
    }

    fn redeliver(
        &mut self,
        max: usize,
        now: Instant,
        out: &mut Vec<Delivery>,
    ) -> Result<(), BrokerError> {
        let Some(timeout) = self.ack_timeout else {
            return Ok(());
        };
        let expired: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(&o, _)| o)
            .take(max)
            .collect();
        for offset in expired {
            let rec = match self.stream.read(offset, 1, READ_BYTES) {
                Ok(v) => v.into_iter().next(),
                // Damaged since it was first read: nothing intact to hand out.
                Err(BrokerError::Storage {
                    source: LogError::Corrupt { .. },
                    ..
                }) => None,
                Err(e) => return Err(e),
            };
            match rec.filter(|r| r.offset == offset) {
                Some(record) => {
                    let p = self
                        .pending
                        .get_mut(&offset)
                        .expect("offset came from pending");
                    p.deliveries = p.deliveries.saturating_add(1);
                    p.deadline = now + timeout;
                    out.push(Delivery {
                        record,
                        delivery_count: p.deliveries,
                    });
                }
                // Retention removed it: nothing left to deliver.
                None => {
                    self.pending.remove(&offset);
                }
            }
        }
        Ok(())
    }

    fn read_new(
        &mut self,
        want: usize,
        now: Instant,
        out: &mut Vec<Delivery>,
    ) -> Result<(), BrokerError> {
        let mut taken = 0;
        while taken < want {
            let batch = match self.stream.read(self.cursor, want - taken, READ_BYTES) {
                Err(BrokerError::Storage {
                    stream,
                    source: LogError::Corrupt { resume, .. },
                }) => {
                    // Damaged data is never served; skip past it rather than
                    // leave the consumer stuck (`fogline log verify` reports it).
                    tracing::error!(
                        stream,
                        from = self.cursor,
                        resume,
                        "skipping corrupt records"
                    );
                    self.cursor = resume.max(self.cursor + 1);
                    continue;
                }
                other => other?,
            };
            let Some(last) = batch.last() else { break };
            self.cursor = last.offset + 1;
            for record in batch {
                if !self.wanted(&record) {
                    continue;
                }
                if let Some(timeout) = self.ack_timeout {
                    self.pending.insert(
                        record.offset,
                        Pending {
                            deadline: now + timeout,
                            deliveries: 1,
                        },
                    );
                }
                out.push(Delivery {
                    record,
                    delivery_count: 1,
                });
                taken += 1;
            }
        }
        Ok(())
    }

    fn wanted(&self, record: &Record) -> bool {
        match &self.filter {
            None => true,
            Some(f) => {
                std::str::from_utf8(&record.topic).is_ok_and(|t| fogline_wire::filter_matches(f, t))
            }
        }
    }

    /// Acknowledges offsets; unknown or already-acked ones are ignored.
    pub fn ack(&mut self, offsets: &[u64]) {
        for o in offsets {
            self.pending.remove(o);
        }
    }

    /// When the earliest pending record expires, if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.pending.values().map(|p| p.deadline).min()
    }

    /// True when a poll now could hand out a new record.
    pub fn has_new(&self) -> bool {
        self.stream.bounds().1 > self.cursor
    }

    /// Persists a durable consumer's floor when it moved.
    ///
    /// # Errors
    /// [`BrokerError::Io`] when the position file cannot be written.
    pub fn save(&mut self) -> Result<(), BrokerError> {
        let Some(name) = &self.name else {
            return Ok(());
        };
        let floor = self.floor();
        if self.stored_floor == Some(floor) {
            return Ok(());
        }
        self.stream.store_floor(name, floor)?;
        self.stored_floor = Some(floor);
        self.saved_at = Some(Instant::now());
        Ok(())
    }

    /// [`Consumer::save`], at most once per `SAVE_INTERVAL`: for the ack
    /// path, so a busy consumer does not write its position on every ack.
    /// A crash may then redeliver what was acked since (at least once).
    ///
    /// # Errors
    /// As [`Consumer::save`].
    pub fn save_if_due(&mut self, now: Instant) -> Result<(), BrokerError> {
        match self.saved_at {
            Some(t) if now < t + SAVE_INTERVAL => Ok(()),
            _ => self.save(),
        }
    }

    /// Waits until new records may be available, the earliest pending record
    /// expires, or `until` passes.
    pub async fn wait(&self, until: Instant) {
        let deadline = self.next_deadline().map_or(until, |d| d.min(until));
        let _ = tokio::time::timeout_at(deadline, self.stream.wait_past(self.cursor)).await;
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        if let Err(e) = self.save() {
            tracing::warn!(error = %e, "could not save consumer position");
        }
        if let Some(name) = &self.name {
            self.stream.release_durable(name);
        }
    }
}
