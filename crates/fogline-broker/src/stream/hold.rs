//! Retention holds: a reader that must see every record (a bridge forwarding the stream
//! during an outage) pins the stream's retention at the first offset it has not taken.
//!
//! Retention never drops a segment holding an offset at or after the lowest held one
//! (`Log::set_retention_floor`). What that keeps past the stream's limits is bounded: once
//! the bytes kept only for holders exceed the stream's hold margin (`retention_hold_max`,
//! and at most its own `retention_bytes` again), appends are refused with
//! [`BrokerError::Held`] until a holder moves on or lets go, so publishers see the hold
//! instead of records vanishing. Holds live in memory: a holder takes its hold again when
//! it starts. Lock order: the stream's log, then its holds.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use fogline_log::Log;
use serde::Serialize;

use super::Stream;
use crate::error::BrokerError;

/// The holders of one stream's retention.
#[derive(Debug, Default)]
pub(super) struct Holds {
    next_id: u64,
    holders: Vec<Holder>,
}

#[derive(Debug)]
struct Holder {
    id: u64,
    name: String,
    from: u64,
}

impl Holds {
    fn floor(&self) -> Option<u64> {
        self.holders.iter().map(|h| h.from).min()
    }

    fn names(&self) -> String {
        let names: Vec<&str> = self.holders.iter().map(|h| h.name.as_str()).collect();
        names.join(", ")
    }
}

/// A stream's retention pinned for one holder: every record at or after its offset stays
/// until it moves on ([`set`](RetentionHold::set)) or is dropped. Made by
/// [`Stream::hold_retention`].
#[derive(Debug)]
pub struct RetentionHold {
    stream: Arc<Stream>,
    id: u64,
}

impl RetentionHold {
    /// Keeps every record at or after `offset` (the first one the holder has not taken)
    /// and lets retention drop those before it; if that brings the stream back within its
    /// hold margin, it takes records again. Takes the stream's log lock.
    pub fn set(&self, offset: u64) {
        let s = &self.stream;
        let mut log = s.log.lock();
        if let Some(h) = s
            .retention_holds
            .lock()
            .holders
            .iter_mut()
            .find(|h| h.id == self.id)
        {
            h.from = offset;
        }
        s.apply_holds(&mut log);
    }

    /// The offset it holds from.
    pub fn offset(&self) -> u64 {
        let holds = self.stream.retention_holds.lock();
        holds
            .holders
            .iter()
            .find(|h| h.id == self.id)
            .map_or(0, |h| h.from)
    }

    /// The stream it holds.
    pub fn stream(&self) -> &Arc<Stream> {
        &self.stream
    }
}

impl Drop for RetentionHold {
    fn drop(&mut self) {
        let s = &self.stream;
        let mut log = s.log.lock();
        s.retention_holds.lock().holders.retain(|h| h.id != self.id);
        s.apply_holds(&mut log);
    }
}

/// A stream's retention holds, as the admin API shows them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HoldInfo {
    /// Who holds it, and from which offset.
    pub holders: Vec<HolderInfo>,
    /// Bytes retention would have dropped but keeps for the holders.
    pub held_bytes: u64,
    /// How many such bytes the stream keeps before it refuses records.
    pub max_bytes: u64,
    /// True while it refuses records for that reason.
    pub full: bool,
    /// Records refused for that reason since the stream was opened.
    pub refused_records: u64,
}

/// One holder of a stream's retention.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HolderInfo {
    /// Its name (a bridge's).
    pub name: String,
    /// Records at or after this offset are kept for it.
    pub offset: u64,
}

impl Stream {
    /// Pins the stream's retention for `holder` (a name for logs and the admin API; several
    /// holders may share one). It holds from the oldest record retained now until the
    /// first [`RetentionHold::set`]; dropping the handle lets go.
    pub fn hold_retention(self: &Arc<Self>, holder: &str) -> RetentionHold {
        let mut log = self.log.lock();
        let mut holds = self.retention_holds.lock();
        let id = holds.next_id;
        holds.next_id += 1;
        holds.holders.push(Holder {
            id,
            name: holder.to_string(),
            from: log.first_offset(),
        });
        drop(holds);
        self.apply_holds(&mut log);
        RetentionHold {
            stream: Arc::clone(self),
            id,
        }
    }

    /// Its holds (`None` when nobody holds it and it refused nothing).
    pub fn hold_info(&self) -> Option<HoldInfo> {
        let log = self.log.lock();
        let holds = self.retention_holds.lock();
        let refused_records = self.hold_refused.load(Relaxed);
        if holds.holders.is_empty() && refused_records == 0 {
            return None;
        }
        Some(HoldInfo {
            holders: holds
                .holders
                .iter()
                .map(|h| HolderInfo {
                    name: h.name.clone(),
                    offset: h.from,
                })
                .collect(),
            held_bytes: log.held_bytes(),
            max_bytes: self.hold_max(&log),
            full: self.hold_full.load(Relaxed),
            refused_records,
        })
    }

    /// True while it refuses records because holders keep more than its hold margin.
    pub fn hold_full(&self) -> bool {
        self.hold_full.load(Relaxed)
    }

    /// Records refused because of holds since the stream was opened.
    pub fn hold_refused(&self) -> u64 {
        self.hold_refused.load(Relaxed)
    }

    /// Bytes held for holders past retention, as of the last retention pass.
    pub fn held_bytes(&self) -> u64 {
        self.log.lock().held_bytes()
    }

    /// The most bytes holders may keep past retention before records are refused.
    fn hold_max(&self, log: &Log) -> u64 {
        let own = log.options().retention_bytes.unwrap_or(u64::MAX);
        self.hold_cap.min(own)
    }

    /// Gives the log the lowest held offset; when the floor lets go of held bytes, runs
    /// retention now, so a refusing stream takes records as soon as its holder moves on.
    fn apply_holds(&self, log: &mut Log) {
        let floor = self.retention_holds.lock().floor();
        log.set_retention_floor(floor);
        if log.held_bytes() > 0 {
            self.run_retention(log, fogline_log::now_micros());
        }
        self.update_hold_full(log);
    }

    /// Sets or clears the refusing state from the log's held bytes, logging each change
    /// once; returns whether records are refused. Called with the log locked, so the load
    /// and store do not race (and an append writes nothing shared while nothing changes).
    pub(super) fn update_hold_full(&self, log: &Log) -> bool {
        let over = log.held_bytes() > self.hold_max(log);
        if over != self.hold_full.load(Relaxed) {
            self.hold_full.store(over, Relaxed);
            let holders = self.retention_holds.lock().names();
            if over {
                tracing::warn!(
                    stream = self.name,
                    holders,
                    held_bytes = log.held_bytes(),
                    max = self.hold_max(log),
                    "retention held past its margin: the stream refuses records until its holders move on"
                );
            } else {
                tracing::info!(
                    stream = self.name,
                    "retention hold back within its margin: the stream takes records again"
                );
            }
        }
        over
    }

    /// The refusal of a batch of `records` while the stream is held past its margin.
    pub(super) fn check_hold(&self, log: &Log, records: u64) -> Result<(), BrokerError> {
        if !self.update_hold_full(log) {
            return Ok(());
        }
        self.hold_refused.fetch_add(records, Relaxed);
        Err(BrokerError::Held {
            stream: self.name.clone(),
            holders: self.retention_holds.lock().names(),
            held_bytes: log.held_bytes(),
            max_bytes: self.hold_max(log),
        })
    }
}
