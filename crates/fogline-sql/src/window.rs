//! The window kinds, driven by a watermark.
//!
//! Processing time and event time share one engine: every record has a time and the
//! watermark says "no record earlier than this will come". In processing time a record's
//! time is its receive time (never behind the watermark) and the watermark is the latest of
//! the clock (`tick`) and the records; in event time the time is the record's timestamp
//! field and the watermark is the highest seen minus the late tolerance. A window emits
//! once the watermark reaches its end; a record behind the watermark is late: dropped and
//! counted (as eKuiper's event window tests show).
//!
//! eKuiper's semantics (docs/en_US/sqls/windows.md): tumbling and hopping windows are
//! aligned to the epoch, `[start, end)`; a sliding window is `(t - length, t + delay]` for
//! each triggering record at `t`; a session ends at `timeout` after its last record, or is
//! cut at the first multiple of its maximum length at which it has run longer than that,
//! the rest going on as a session from the cut (as eKuiper's window tests show); a count
//! window holds the last `count` records
//! and emits every `interval` of them once it is full. Windows without records emit
//! nothing.

use std::sync::Arc;

use crate::ast::WindowKind;
use crate::error::SqlError;
use crate::eval::Fields;
use crate::value::{Row, Value};

/// A record held by a window.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Rec {
    /// Its fields (those the rule reads).
    pub row: Compact,
    /// Its topic.
    pub topic: Arc<str>,
    /// Its time for windowing (ms).
    pub ts: i64,
    /// Its meta timestamp (broker receive time, ms).
    pub meta_ts: i64,
}

/// A row as a window keeps it: only the fields the rule reads, names shared with the plan,
/// sorted by name (a fraction of a `BTreeMap`'s node per row).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Compact(Box<[(Arc<str>, Value)]>);

impl Compact {
    /// The fields of `row` named in `keep` (sorted).
    pub(crate) fn keep(mut row: Row, keep: &[Arc<str>]) -> Compact {
        Compact(
            keep.iter()
                .filter_map(|k| Some((k.clone(), row.remove(&**k)?)))
                .collect(),
        )
    }

    /// Every field of `row`.
    pub(crate) fn all(row: Row) -> Compact {
        Compact(row.into_iter().map(|(k, v)| (Arc::from(k), v)).collect())
    }
}

impl Fields for Compact {
    fn field(&self, name: &str) -> Option<&Value> {
        let i = self.0.binary_search_by(|(k, _)| (**k).cmp(name)).ok()?;
        Some(&self.0[i].1)
    }
    fn each(&self, f: &mut dyn FnMut(&str, &Value)) {
        self.0.iter().for_each(|(k, v)| f(k, v));
    }
    fn to_row(&self) -> Row {
        self.0
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }
}

/// Records in time order: a vector read from `head`, so that evicting the oldest is a
/// move of `head` (compacted now and then), not a shift of every record.
#[derive(Debug, Default)]
pub(crate) struct Buf {
    v: Vec<Rec>,
    head: usize,
}

impl Buf {
    fn push(&mut self, r: Rec) {
        self.v.push(r);
    }

    /// Inserts at `at`, counted from the oldest.
    fn insert(&mut self, at: usize, r: Rec) {
        self.v.insert(self.head + at, r);
    }

    /// Drops the `n` oldest.
    fn evict(&mut self, n: usize) {
        // Dropped now, storage reclaimed once half the vector is dead.
        for r in &mut self.v[self.head..self.head + n] {
            r.row = Compact::default();
        }
        self.head += n;
        if self.head * 2 >= self.v.len() {
            self.v.drain(..self.head);
            self.head = 0;
        }
    }

    fn clear(&mut self) {
        self.v.clear();
        self.head = 0;
    }
}

impl From<Vec<Rec>> for Buf {
    fn from(v: Vec<Rec>) -> Buf {
        Buf { v, head: 0 }
    }
}

impl std::ops::Deref for Buf {
    type Target = [Rec];
    fn deref(&self) -> &[Rec] {
        &self.v[self.head..]
    }
}

/// Called for each window emitted: bounds and rows (in time order).
pub(crate) type Fire<'f> = dyn FnMut(i64, i64, &[Rec]) -> Result<(), SqlError> + 'f;

/// The session a session window closes next.
struct SessionPart {
    start: i64,
    end: i64,
    /// Its records: the first `rows` of the buffer.
    rows: usize,
    /// Time of its last record (or of the last before the cut it goes on from).
    last: i64,
    /// Cut at the maximum length (it goes on from `end`), not ended by the timeout.
    cut: bool,
}

/// A window's state.
#[derive(Debug)]
pub(crate) struct Windows {
    pub(crate) kind: WindowKind,
    /// Records, sorted by time (stable: arrival order among equal times).
    pub(crate) buf: Buf,
    /// No record earlier than this is to come (`i64::MIN` before any).
    pub(crate) wm: i64,
    /// Highest record time seen (event time's watermark source).
    pub(crate) max_seen: i64,
    /// Session windows: a session cut at its maximum length goes on from the cut
    /// `(cut, time of its last record)`.
    pub(crate) cont: Option<(i64, i64)>,
    /// Sliding windows: pending `(end, trigger time)`, sorted.
    pub(crate) triggers: Vec<(i64, i64)>,
    /// Count windows: records seen.
    pub(crate) since: u64,
    /// Records dropped as late.
    pub(crate) late: u64,
}

fn floor_div(a: i64, b: i64) -> i64 {
    a.div_euclid(b)
}

impl Windows {
    pub(crate) fn new(kind: WindowKind) -> Windows {
        Windows {
            kind,
            buf: Buf::default(),
            wm: i64::MIN,
            max_seen: i64::MIN,
            cont: None,
            triggers: Vec::new(),
            since: 0,
            late: 0,
        }
    }

    /// (length, hop) of a tumbling or hopping window.
    fn fixed(&self) -> Option<(i64, i64)> {
        match self.kind {
            WindowKind::Tumbling { length_ms } => Some((length_ms as i64, length_ms as i64)),
            WindowKind::Hopping { length_ms, hop_ms } => Some((length_ms as i64, hop_ms as i64)),
            _ => None,
        }
    }

    /// True when a record at `ts` is behind the watermark (eKuiper drops those; a window
    /// still to come holds every record at or after it).
    fn is_late(&self, ts: i64) -> bool {
        ts < self.wm
    }

    /// Sees a record's time before any clause runs on it (eKuiper's watermark comes first):
    /// false when it is late, dropped and counted.
    pub(crate) fn admit(&mut self, ts: i64) -> bool {
        if let WindowKind::Count { .. } = self.kind {
            return true;
        }
        if self.is_late(ts) {
            self.late += 1;
            return false;
        }
        self.max_seen = self.max_seen.max(ts);
        true
    }

    /// Adds an admitted record (`trigger`: it meets a sliding window's `OVER (WHEN ..)`).
    /// Count windows emit here; time windows on [`Windows::advance`].
    pub(crate) fn insert(
        &mut self,
        rec: Rec,
        trigger: bool,
        fire: &mut Fire<'_>,
    ) -> Result<(), SqlError> {
        if let WindowKind::Count { count, interval } = self.kind {
            self.buf.push(rec);
            self.since += 1;
            let count = count as usize;
            if self.buf.len() > count {
                let extra = self.buf.len() - count;
                self.buf.evict(extra);
            }
            // Tumbling: every `count` records; else every `interval`-th once full (the
            // docs' COUNTWINDOW(5, 2) first emits at the 6th record).
            let due = if interval == 0 {
                self.buf.len() == count
            } else {
                self.since >= count as u64 && self.since % interval == 0
            };
            if due {
                let (s, e) = (self.buf[0].ts, self.buf[count - 1].ts);
                fire(s, e, &self.buf[..])?;
                if interval == 0 {
                    self.buf.clear();
                }
            }
            return Ok(());
        }
        let ts = rec.ts;
        let at = self.buf.partition_point(|r| r.ts <= ts);
        self.buf.insert(at, rec);
        if let (WindowKind::Sliding { delay_ms, .. }, true) = (&self.kind, trigger) {
            let e = (ts + *delay_ms as i64, ts);
            let at = self.triggers.partition_point(|x| *x <= e);
            self.triggers.insert(at, e);
        }
        Ok(())
    }

    /// Moves the watermark to `wm` (never back) and emits every window ending by then.
    pub(crate) fn advance(&mut self, wm: i64, fire: &mut Fire<'_>) -> Result<(), SqlError> {
        // Not an early return on an unchanged watermark: a sliding window triggered at the
        // watermark is due now.
        let wm = wm.max(self.wm);
        if let WindowKind::Count { .. } = self.kind {
            return Ok(()); // count windows do not look at time
        }
        match self.kind.clone() {
            WindowKind::Tumbling { .. } | WindowKind::Hopping { .. } => {
                let (len, hop) = self.fixed().expect("fixed");
                let mut done = self.wm;
                while let Some(first) = self.buf.first() {
                    // The first window not yet emitted that holds the earliest record.
                    let mut e = (floor_div(first.ts - len, hop) + 1) * hop + len;
                    if done != i64::MIN && e <= done {
                        e = (floor_div(done - len, hop) + 1) * hop + len;
                    }
                    if e > wm {
                        break;
                    }
                    let lo = self.buf.partition_point(|r| r.ts < e - len);
                    let hi = self.buf.partition_point(|r| r.ts < e);
                    if lo < hi {
                        fire(e - len, e, &self.buf[lo..hi])?;
                    }
                    let keep = self
                        .buf
                        .partition_point(|r| floor_div(r.ts, hop) * hop + len <= e);
                    self.buf.evict(keep);
                    done = e;
                }
            }
            WindowKind::Sliding { length_ms, .. } => {
                let len = length_ms as i64;
                while let Some(&(e, t)) = self.triggers.first() {
                    if e > wm {
                        break;
                    }
                    self.triggers.remove(0);
                    let lo = self.buf.partition_point(|r| r.ts <= t - len);
                    let hi = self.buf.partition_point(|r| r.ts <= e);
                    fire(t - len, e, &self.buf[lo..hi])?;
                }
                let oldest = self
                    .triggers
                    .iter()
                    .map(|x| x.1)
                    .min()
                    .unwrap_or(wm)
                    .min(wm);
                let keep = self.buf.partition_point(|r| r.ts <= oldest - len);
                self.buf.evict(keep);
            }
            WindowKind::Session { .. } => {
                while let Some(p) = self.session_part() {
                    if p.end > wm {
                        break;
                    }
                    if p.rows > 0 {
                        fire(p.start, p.end, &self.buf[..p.rows])?;
                    }
                    self.buf.evict(p.rows);
                    self.cont = p.cut.then_some((p.end, p.last));
                }
            }
            WindowKind::Count { .. } => {}
        }
        self.wm = wm;
        Ok(())
    }

    /// The session to close next: it starts at the first record (or at the cut it goes on
    /// from); a record joins it if it comes within `timeout` of the previous one. It ends at
    /// `timeout` after its last record, or is cut at the first multiple of `max` at which it
    /// has run longer than `max` (eKuiper checks the length at those multiples).
    fn session_part(&self) -> Option<SessionPart> {
        let WindowKind::Session {
            max_length_ms,
            timeout_ms,
        } = self.kind
        else {
            return None;
        };
        let (max, timeout) = (max_length_ms as i64, timeout_ms as i64);
        let (start, mut last) = match self.cont {
            Some((t, l)) => (t, Some(l)),
            None => (self.buf.first()?.ts, None),
        };
        let cut = (floor_div(start + max, max) + 1) * max;
        let mut end = last.map_or(cut, |l| (l + timeout).min(cut));
        let mut rows = 0;
        for r in self.buf.iter() {
            if last.is_some() && r.ts >= end {
                break;
            }
            last = Some(r.ts);
            rows += 1;
            end = (r.ts + timeout).min(cut);
        }
        let last = last.expect("a session has a record or goes on from one");
        Some(SessionPart {
            start,
            end,
            rows,
            last,
            cut: end == cut && last + timeout > cut,
        })
    }

    /// When the watermark must next reach to emit a window (processing time's timer).
    pub(crate) fn next_due(&self) -> Option<i64> {
        if let WindowKind::Session { .. } = self.kind {
            return self.session_part().map(|p| p.end);
        }
        let first = self.buf.first()?;
        match self.kind {
            WindowKind::Tumbling { .. } | WindowKind::Hopping { .. } => {
                let (len, hop) = self.fixed().expect("fixed");
                let mut e = (floor_div(first.ts - len, hop) + 1) * hop + len;
                if self.wm != i64::MIN && e <= self.wm {
                    e = (floor_div(self.wm - len, hop) + 1) * hop + len;
                }
                Some(e)
            }
            WindowKind::Sliding { .. } => self.triggers.first().map(|x| x.0),
            WindowKind::Session { .. } | WindowKind::Count { .. } => None,
        }
    }
}

/// A record's event time from the stream's TIMESTAMP field (ms).
pub(crate) fn event_time(row: &Row, field: Option<&str>) -> Result<i64, SqlError> {
    let f = field.unwrap_or_default();
    let t = match row.get(f) {
        Some(Value::Int(t)) => *t,
        Some(Value::Float(t)) => *t as i64,
        v => return Err(SqlError::Eval(format!("event time field {f} is {v:?}"))),
    };
    if t.abs() > MAX_TIME {
        return Err(SqlError::Eval(format!("event time {t} out of range")));
    }
    Ok(t)
}

/// Event times and window sizes stay within this (2^53 ms, 285 000 years), processing
/// times within 2^62: window arithmetic never overflows.
pub(crate) const MAX_TIME: i64 = 1 << 53;

/// A processing time (receipt or clock) within range.
pub(crate) fn clock(t: i64) -> i64 {
    t.clamp(-(1 << 62), 1 << 62)
}

/// Most hopping windows one record may fall in (length / hop): each is emitted with the
/// record, so more would cost time and memory without bound (found by fuzzing:
/// `HOPPINGWINDOW(ss, 4333333333344, 4)`).
pub const MAX_HOPS: u64 = 1000;

/// Why a hopping window is too many hops long, if it is (the parser and the plan both ask).
pub(crate) fn too_many_hops(length_ms: u64, hop_ms: u64) -> Option<String> {
    (hop_ms > 0 && length_ms / hop_ms > MAX_HOPS).then(|| {
        format!(
            "HOPPINGWINDOW: a record would fall in {} windows (length / hop); at most {MAX_HOPS}",
            length_ms / hop_ms
        )
    })
}

pub(crate) fn check_window(k: &WindowKind) -> Result<(), SqlError> {
    if let WindowKind::Hopping { length_ms, hop_ms } = *k {
        if let Some(why) = too_many_hops(length_ms, hop_ms) {
            return Err(SqlError::Plan(why));
        }
    }
    let too_big = |d: u64| d > MAX_TIME as u64;
    let bad = match *k {
        WindowKind::Tumbling { length_ms } => length_ms == 0 || too_big(length_ms),
        WindowKind::Hopping { length_ms, hop_ms } => {
            hop_ms == 0 || hop_ms > length_ms || too_big(length_ms)
        }
        WindowKind::Sliding {
            length_ms,
            delay_ms,
        } => length_ms == 0 || too_big(length_ms) || too_big(delay_ms),
        WindowKind::Session {
            max_length_ms,
            timeout_ms,
        } => max_length_ms == 0 || timeout_ms == 0 || too_big(max_length_ms) || too_big(timeout_ms),
        WindowKind::Count { count, interval } => count == 0 || interval > count,
    };
    if bad {
        return Err(SqlError::Plan(format!("invalid window {k:?}")));
    }
    Ok(())
}
