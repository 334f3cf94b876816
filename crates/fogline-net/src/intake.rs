//! What a connection may hold of a frame it is still receiving.
//!
//! Every connection reads into a buffer of `base` bytes (64 KiB). A frame larger than what
//! that buffer has room for needs more, and a peer could announce a frame of the largest
//! size allowed, send most of it and stall: a hundred such peers took a server from 7 MB to
//! 911 MB. So the room beyond `base` comes from one [`ReadBudget`] shared by every
//! connection of the node, and a frame must arrive whole within a time limit once its first
//! byte has.
//!
//! A connection that needs room the budget does not have stops reading (its peer's sends
//! wait in TCP) until a frame completes or a connection closes somewhere and gives room
//! back; if its frame's time runs out first, it is closed. When its buffer empties, a
//! connection that grew it goes back to a buffer of `base` bytes and returns its room, so
//! memory follows what is being received, not the largest frame ever received.
//!
//! Worst case, per node: the budget, plus `base` (and a small compaction copy) per
//! connection. Per connection: `base` plus at most the largest frame allowed, and only while
//! the budget has room for it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use tokio::sync::futures::Notified;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Room made ahead of the bytes received on the strength of an announced length alone:
/// enough for a 1 MiB message's frame in one read, and no more, so a peer that announces a
/// huge frame and stalls makes the reader reserve at most this much (then the room grows
/// with what arrives).
pub const RESERVE_AHEAD: usize = 2 << 20;

/// The node-wide budget for read-buffer bytes beyond each connection's base buffer.
#[derive(Debug)]
pub struct ReadBudget {
    limit: usize,
    used: AtomicUsize,
    room: Notify,
    waited: AtomicU64,
    expired: AtomicU64,
}

impl ReadBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Arc<ReadBudget> {
        Arc::new(ReadBudget {
            limit,
            used: AtomicUsize::new(0),
            room: Notify::new(),
            waited: AtomicU64::new(0),
            expired: AtomicU64::new(0),
        })
    }

    /// The budget's size.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Times a connection had to wait for room.
    pub fn waits(&self) -> u64 {
        self.waited.load(Ordering::Relaxed)
    }

    /// Connections closed because a frame did not arrive whole in time.
    pub fn expired(&self) -> u64 {
        self.expired.load(Ordering::Relaxed)
    }

    /// A wake-up for when a connection gives room back; take it before
    /// [`Intake::make_room`] so none is missed.
    pub fn room_freed(&self) -> Notified<'_> {
        self.room.notified()
    }

    fn try_take(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                u.checked_add(bytes).filter(|&n| n <= self.limit)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: usize) {
        if bytes > 0 {
            self.used.fetch_sub(bytes, Ordering::AcqRel);
            self.room.notify_waiters();
        }
    }
}

/// One connection's side of the budget and of the frame time limit.
#[derive(Debug)]
pub struct Intake {
    budget: Arc<ReadBudget>,
    base: usize,
    timeout: Duration,
    /// Bytes of the budget this connection holds: its buffer's size beyond `base`.
    held: usize,
    /// When the first byte of the frame still being received arrived.
    since: Option<Instant>,
    /// It waited for room and has not got it yet (counted once per wait).
    waiting: bool,
}

impl Intake {
    /// A connection with `base`-byte buffers whose frames must arrive within `timeout`.
    pub fn new(budget: Arc<ReadBudget>, base: usize, timeout: Duration) -> Intake {
        Intake {
            budget,
            base,
            timeout,
            held: 0,
            since: None,
            waiting: false,
        }
    }

    /// A fresh buffer of the base size.
    pub fn buffer(&self) -> BytesMut {
        BytesMut::with_capacity(self.base)
    }

    /// After decoding from `buf` (`took`: whether a frame came out): starts or stops the
    /// frame clock, and when `buf` is empty gives back the room of a grown buffer.
    pub fn settle(&mut self, buf: &mut BytesMut, took: bool) {
        if took || buf.is_empty() {
            self.since = None;
        }
        if buf.is_empty() && self.held > 0 {
            *buf = self.buffer();
            self.release();
        }
        if !buf.is_empty() && self.since.is_none() {
            self.since = Some(Instant::now());
        }
    }

    /// When the frame being received must be whole; `None` with nothing pending.
    pub fn deadline(&self) -> Option<Instant> {
        self.since.map(|s| s + self.timeout)
    }

    /// The budget it draws on.
    pub fn budget(&self) -> Arc<ReadBudget> {
        self.budget.clone()
    }

    /// The limit, for messages.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Counts a connection closed because its frame's time ran out.
    pub fn expire(&self) {
        self.budget.expired.fetch_add(1, Ordering::Relaxed);
    }

    /// Makes room in `buf` for the next read: for the rest of a frame of `need` bytes in
    /// all (as its header announced; 0 when not known yet), at most [`RESERVE_AHEAD`] or
    /// the bytes already here beyond what arrived, and at least a quarter of the base.
    /// False when that needs more of the budget than is free: read nothing until
    /// [`ReadBudget::room_freed`].
    pub fn make_room(&mut self, buf: &mut BytesMut, need: usize) -> bool {
        let len = buf.len();
        let ahead = need
            .saturating_sub(len)
            .min(RESERVE_AHEAD.max(len))
            .max(self.base / 4);
        let want = len + ahead;
        if buf.capacity() >= want {
            return true;
        }
        let size = want.max(self.base);
        let extra = size - self.base;
        if extra > self.held {
            if !self.budget.try_take(extra - self.held) {
                if !self.waiting {
                    self.waiting = true;
                    self.budget.waited.fetch_add(1, Ordering::Relaxed);
                }
                return false;
            }
            self.held = extra;
        }
        self.waiting = false;
        let mut grown = BytesMut::with_capacity(size);
        grown.extend_from_slice(buf);
        *buf = grown;
        true
    }

    fn release(&mut self) {
        self.budget.give_back(std::mem::take(&mut self.held));
    }
}

impl Drop for Intake {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: usize = 64 << 10;

    fn intake(budget: &Arc<ReadBudget>) -> Intake {
        Intake::new(budget.clone(), BASE, Duration::from_secs(30))
    }

    #[test]
    fn small_frames_never_touch_the_budget() {
        let budget = ReadBudget::new(0);
        let mut i = intake(&budget);
        let mut buf = i.buffer();
        buf.extend_from_slice(&[1; 1000]);
        assert!(i.make_room(&mut buf, 5000));
        assert_eq!(budget.used(), 0);
        assert!(buf.capacity() >= BASE);
    }

    #[test]
    fn a_large_frame_takes_room_as_it_arrives_and_gives_it_back() {
        let budget = ReadBudget::new(64 << 20);
        let mut i = intake(&budget);
        let mut buf = i.buffer();
        let frame = 15 << 20;
        buf.extend_from_slice(&[0; 100]);
        assert!(i.make_room(&mut buf, frame));
        // Room for RESERVE_AHEAD more, not the whole announced frame.
        assert_eq!(buf.capacity(), 100 + RESERVE_AHEAD);
        assert_eq!(budget.used(), 100 + RESERVE_AHEAD - BASE);
        while buf.len() < frame {
            let n = (buf.capacity() - buf.len()).min(frame - buf.len());
            buf.extend_from_slice(&vec![0; n]);
            assert!(i.make_room(&mut buf, frame));
            assert!(buf.capacity() <= 2 * buf.len().max(RESERVE_AHEAD) + BASE);
        }
        assert_eq!(budget.used(), buf.capacity() - BASE);
        let whole = buf.split_to(frame);
        i.settle(&mut buf, true);
        assert_eq!((budget.used(), buf.capacity()), (0, BASE));
        drop(whole);
    }

    #[test]
    fn an_exhausted_budget_stops_reading_until_room_comes_back() {
        let budget = ReadBudget::new(3 << 20);
        let (mut a, mut b) = (intake(&budget), intake(&budget));
        let (mut ba, mut bb) = (a.buffer(), b.buffer());
        ba.extend_from_slice(&[0; 10]);
        bb.extend_from_slice(&[0; 10]);
        assert!(a.make_room(&mut ba, 8 << 20));
        assert!(!b.make_room(&mut bb, 8 << 20), "the budget is spent");
        assert!(!b.make_room(&mut bb, 8 << 20));
        assert_eq!(budget.waits(), 1);
        // b still reads small frames.
        assert!(b.make_room(&mut bb, 100));
        drop(a);
        assert_eq!(budget.used(), 0);
        assert!(b.make_room(&mut bb, 8 << 20));
    }

    #[tokio::test(start_paused = true)]
    async fn the_frame_clock_runs_from_its_first_byte_until_a_frame_is_whole() {
        let budget = ReadBudget::new(0);
        let mut i = intake(&budget);
        let mut buf = i.buffer();
        i.settle(&mut buf, false);
        assert_eq!(i.deadline(), None);
        let t0 = Instant::now();
        buf.extend_from_slice(b"part");
        i.settle(&mut buf, false);
        tokio::time::advance(Duration::from_secs(5)).await;
        buf.extend_from_slice(b" more");
        i.settle(&mut buf, false);
        assert_eq!(i.deadline(), Some(t0 + Duration::from_secs(30)));
        // A frame came out and a new one started: its own clock.
        buf.clear();
        buf.extend_from_slice(b"next");
        i.settle(&mut buf, true);
        assert_eq!(i.deadline(), Some(Instant::now() + Duration::from_secs(30)));
    }
}
