//! Durable consumers: cursors on a stream with acks and redelivery.
//!
//! A consumer reads new records from `cursor` on. With acks on, each record
//! handed out waits in `pending` until acked; one not acked within the ack
//! timeout is handed out again (at least once). The acknowledged floor is the
//! lowest pending offset, or the cursor when nothing is pending: every record
//! below it was acked or filtered out, so a durable consumer resumes there.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use fogline_log::Record;
use tokio::time::Instant;

use crate::error::BrokerError;
use crate::stream::{ConsumerState, Stream};

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

/// Who opens a consumer: a durable consumer is bound to the first logged-in user who
/// opens it (see `stream::durables`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opener<'a> {
    /// A component of the node (the rules): trusted; binds nothing, is refused nothing.
    Node,
    /// A client, logged in as this user (`None`: anonymous, or a node that does not
    /// authenticate, where names are not proven).
    Client(Option<&'a str>),
}

/// Durable consumer names the node's rules use (`rule.<id>`): clients may not open them.
pub const RULE_CONSUMER_PREFIX: &str = "rule.";

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
    /// What the admin API sees of it (in the stream's table of open consumers).
    state: Arc<ConsumerState>,
}

/// Least time between two position writes caused by acks (a write is a
/// file create and rename; closing the consumer always writes).
const SAVE_INTERVAL: Duration = Duration::from_millis(100);

/// Bytes a poll reads from the log at most (beyond its first record), so one fetch or push
/// batch stays bounded in memory and a filter that matches little does not scan the whole
/// stream under the consumer's lock.
const READ_BYTES: usize = 4 << 20;

impl Consumer {
    /// Opens a consumer of `stream` for `opener` (a durable consumer is bound to its first
    /// logged-in user, see `stream::durables`).
    pub(crate) fn open(
        stream: Arc<Stream>,
        opts: ConsumerOptions,
        opener: Opener<'_>,
    ) -> Result<Consumer, BrokerError> {
        if let Some(f) = &opts.filter {
            fogline_wire::validate_filter(f)
                .map_err(|e| BrokerError::InvalidFilter(e.to_string()))?;
        }
        let (stored, bound) = match &opts.name {
            Some(name) if !crate::config::valid_consumer_name(name) => {
                return Err(BrokerError::InvalidName(name.clone()))
            }
            Some(name) => stream.claim_durable(name, opener)?,
            None => (None, false),
        };
        let (first, next) = stream.bounds();
        let cursor = match opts.start {
            Start::Earliest => first,
            Start::Latest => next,
            Start::Offset(o) => o.clamp(first, next),
            Start::Time(t) => stream.offset_for_time(t),
            Start::Resume => stored.unwrap_or(first).clamp(first, next),
        };
        if let (Some(name), true) = (&opts.name, bound) {
            // Its owner is on disk before anyone else could take it after a crash.
            let saved = stream.store_floor(name, stored.unwrap_or(cursor));
            if let Err(e) = saved {
                stream.release_durable(name);
                return Err(e);
            }
        }
        let state = stream.register_consumer(opts.name.clone(), opts.filter.clone(), cursor);
        Ok(Consumer {
            stream,
            state,
            name: opts.name,
            filter: opts.filter,
            cursor,
            pending: BTreeMap::new(),
            ack_timeout: opts.ack_timeout,
            max_inflight: opts.max_inflight.max(1),
            // What is on disk (or queued): the floor stored when the owner was bound.
            stored_floor: if bound {
                Some(stored.unwrap_or(cursor))
            } else {
                stored
            },
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
    ///
    /// A poll reads about [`READ_BYTES`] from the log at most, so it may hand out fewer than
    /// `max` records (even none, after skipping records its filter rejects) while
    /// [`has_new`](Consumer::has_new) still holds: poll again.
    pub fn poll(&mut self, max: usize, now: Instant) -> Result<Vec<Delivery>, BrokerError> {
        let mut out = Vec::new();
        let mut budget = READ_BYTES;
        self.redeliver(max, now, &mut budget, &mut out)?;
        let room = match self.ack_timeout {
            Some(_) => self.max_inflight.saturating_sub(self.pending.len()),
            None => usize::MAX,
        };
        let want = max.saturating_sub(out.len()).min(room);
        let again = out.len();
        if want > 0 && (budget > 0 || out.is_empty()) {
            if let Err(e) = self.read_new(want, now, budget, &mut out) {
                self.report();
                return Err(e);
            }
        }
        self.state.redelivered.fetch_add(again as u64, Relaxed);
        self.state
            .delivered
            .fetch_add((out.len() - again) as u64, Relaxed);
        self.report();
        Ok(out)
    }

    /// Publishes its cursor, floor and pending count for the admin API.
    fn report(&self) {
        self.state.cursor.store(self.cursor, Relaxed);
        self.state.floor.store(self.floor(), Relaxed);
        self.state.pending.store(self.pending.len() as u64, Relaxed);
    }

    /// False while `max_inflight` records wait for their acks: a poll hands out only
    /// expired ones until an ack makes room.
    pub fn has_room(&self) -> bool {
        self.ack_timeout.is_none() || self.pending.len() < self.max_inflight
    }

    fn redeliver(
        &mut self,
        max: usize,
        now: Instant,
        budget: &mut usize,
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
            if *budget == 0 && !out.is_empty() {
                break;
            }
            let rec = match self.stream.read(offset, 1, READ_BYTES) {
                Ok(v) => v.into_iter().next(),
                // Damaged since it was first read, or lost: nothing intact to hand out.
                Err(BrokerError::Storage { source, .. }) if source.resume().is_some() => None,
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
                    *budget = budget.saturating_sub(record_bytes(&record));
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

    /// Reads new records until `want` are taken or about `budget` bytes were read (matching
    /// or not; at least one record when nothing was handed out yet).
    fn read_new(
        &mut self,
        want: usize,
        now: Instant,
        mut budget: usize,
        out: &mut Vec<Delivery>,
    ) -> Result<(), BrokerError> {
        let mut taken = 0;
        let mut read_any = !out.is_empty();
        while taken < want && (budget > 0 || !read_any) {
            // The log hands out one record past a smaller limit, so the first read is never empty.
            let limit = budget.max(1);
            let batch = match self.stream.read(self.cursor, want - taken, limit) {
                // Hand out what came before first; the next poll reports the rest.
                Err(e) if is_loss(&e) && !out.is_empty() => break,
                Err(BrokerError::Storage { stream, source }) if source.resume().is_some() => {
                    // Damaged or lost records are never served. The consumer moves past
                    // them rather than stay stuck, and says so once: its reader gets this
                    // error in place of an empty answer, the log a warning.
                    let resume = source.resume().unwrap_or_default().max(self.cursor + 1);
                    tracing::warn!(
                        stream,
                        consumer = self.name.as_deref().unwrap_or("(ephemeral)"),
                        from = self.cursor,
                        resume,
                        "{source}: the consumer skips offsets without an intact record"
                    );
                    self.cursor = resume;
                    return Err(BrokerError::Storage { stream, source });
                }
                other => other?,
            };
            let Some(last) = batch.last() else { break };
            self.cursor = last.offset + 1;
            read_any = true;
            for record in batch {
                budget = budget.saturating_sub(record_bytes(&record));
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
        self.report();
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
    /// expires, or `until` passes. With no room under `max_inflight`, new records
    /// do not end the wait: only an expiry (or the caller's ack) can.
    pub async fn wait(&self, until: Instant) {
        let deadline = self.next_deadline().map_or(until, |d| d.min(until));
        if self.has_room() {
            let _ = tokio::time::timeout_at(deadline, self.stream.wait_past(self.cursor)).await;
        } else {
            tokio::time::sleep_until(deadline).await;
        }
    }
}

/// Bytes a record takes, for the read budget.
fn record_bytes(r: &Record) -> usize {
    r.topic.len() + r.headers.len() + r.payload.len()
}

impl Drop for Consumer {
    fn drop(&mut self) {
        if let Err(e) = self.save() {
            tracing::warn!(error = %e, "could not save consumer position");
        }
        self.stream.unregister_consumer(&self.state);
        if let Some(name) = &self.name {
            self.stream.release_durable(name);
        }
    }
}

/// An error that says some offsets hold no intact record (and where reading goes on).
fn is_loss(e: &BrokerError) -> bool {
    matches!(e, BrokerError::Storage { source, .. } if source.resume().is_some())
}
