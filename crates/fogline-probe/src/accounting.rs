//! Sequence-number accounting: loss, duplicates and reordering are counted, not guessed.
//!
//! Each producer numbers its messages 0, 1, 2, ...; each subscriber keeps one [`SeqTracker`]
//! per producer. A bitset remembers which numbers arrived, so after the run
//! `lost = sent - unique` exactly. A message is *reordered* when it is new but a higher number
//! from the same producer arrived before it. Invariant: `unique + duplicates + unexpected`
//! equals the number of messages recorded.

use serde::{Deserialize, Serialize};

/// What one arrival was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// First time seen, in order.
    New,
    /// First time seen, but after a higher sequence number.
    Reordered,
    /// Seen before.
    Duplicate,
    /// Too far from every number seen so far to be one of this producer's (a message that
    /// only looked like a probe's): counted as unexpected, not tracked.
    Foreign,
}

/// Words (of 64 numbers) a tracker's window may span beyond two per distinct number seen:
/// room for 1 Mi numbers of reordering or loss at the start, 128 KiB.
const WINDOW_SLACK: u64 = 1 << 14;

/// Producer ids beyond this are not tracked (ids are dense from 0).
const MAX_PRODUCERS: u32 = 1 << 16;

/// The arrivals of one producer's stream at one subscriber.
///
/// A bitset over a window of sequence numbers that starts at the first one seen (so a
/// subscriber that joins late does not pay for the numbers before it). The window grows
/// only in proportion to the distinct numbers seen: a number far outside it is foreign, so
/// arbitrary payloads read as probe headers cannot make it allocate without bound.
#[derive(Debug, Default, Clone)]
pub struct SeqTracker {
    seen: Vec<u64>,
    /// The first word of the window.
    base: u64,
    unique: u64,
    duplicates: u64,
    reordered: u64,
    foreign: u64,
    highest: Option<u64>,
}

impl SeqTracker {
    /// Records the arrival of `seq`.
    pub fn record(&mut self, seq: u64) -> Arrival {
        let word = seq / 64;
        if self.seen.is_empty() {
            self.base = word;
        }
        let end = self.base + self.seen.len() as u64;
        if word < self.base || word >= end {
            let span = end.max(word + 1) - self.base.min(word);
            if span > WINDOW_SLACK + 2 * self.unique {
                self.foreign += 1;
                return Arrival::Foreign;
            }
            if word < self.base {
                let more = (self.base - word) as usize;
                self.seen.splice(0..0, std::iter::repeat_n(0, more));
                self.base = word;
            } else {
                self.seen.resize((word + 1 - self.base) as usize, 0);
            }
        }
        let i = (word - self.base) as usize;
        let bit = 1u64 << (seq % 64);
        if self.seen[i] & bit != 0 {
            self.duplicates += 1;
            return Arrival::Duplicate;
        }
        self.seen[i] |= bit;
        self.unique += 1;
        match self.highest {
            Some(h) if seq < h => {
                self.reordered += 1;
                Arrival::Reordered
            }
            _ => {
                self.highest = Some(seq);
                Arrival::New
            }
        }
    }

    /// Distinct sequence numbers received.
    pub fn unique(&self) -> u64 {
        self.unique
    }

    /// Distinct sequence numbers received that are below `sent` (the ones that were expected).
    pub fn unique_below(&self, sent: u64) -> u64 {
        let full = (sent / 64).saturating_sub(self.base) as usize;
        let mut n: u64 = self
            .seen
            .iter()
            .take(full)
            .map(|w| u64::from(w.count_ones()))
            .sum();
        let rem = sent % 64;
        if rem > 0 && sent / 64 >= self.base {
            if let Some(w) = self.seen.get(full) {
                n += u64::from((w & ((1u64 << rem) - 1)).count_ones());
            }
        }
        n
    }
}

/// Totals over every producer and subscriber of a run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivery {
    /// Messages that should have arrived: sent x subscribers.
    pub expected: u64,
    /// Distinct expected messages that arrived.
    pub received: u64,
    /// `expected - received`.
    pub lost: u64,
    /// Arrivals of a message already received.
    pub duplicates: u64,
    /// New arrivals that came after a higher sequence number of the same producer.
    pub reordered: u64,
    /// Arrivals with a sequence number the producer never sent, or undecodable.
    pub unexpected: u64,
}

/// One subscriber's trackers, one per producer (producer ids are dense from 0).
#[derive(Debug, Default, Clone)]
pub struct SubscriberLedger {
    trackers: Vec<SeqTracker>,
    unexpected: u64,
}

impl SubscriberLedger {
    /// Records one arrival from `producer`.
    pub fn record(&mut self, producer: u32, seq: u64) -> Arrival {
        if producer >= MAX_PRODUCERS {
            self.unexpected += 1;
            return Arrival::Foreign;
        }
        let i = producer as usize;
        if i >= self.trackers.len() {
            self.trackers.resize_with(i + 1, SeqTracker::default);
        }
        self.trackers[i].record(seq)
    }

    /// Counts an arrival that could not be decoded.
    pub fn record_unexpected(&mut self) {
        self.unexpected += 1;
    }

    /// Distinct messages received from every producer.
    pub fn unique(&self) -> u64 {
        self.trackers.iter().map(SeqTracker::unique).sum()
    }

    /// Adds this ledger's counts to `total`, given how many each producer sent.
    pub fn settle(&self, sent_by_producer: &[u64], total: &mut Delivery) {
        let mut unexpected = self.unexpected;
        for (i, &sent) in sent_by_producer.iter().enumerate() {
            total.expected += sent;
            if let Some(t) = self.trackers.get(i) {
                let got = t.unique_below(sent);
                total.received += got;
                total.lost += sent - got;
                total.duplicates += t.duplicates;
                total.reordered += t.reordered;
                unexpected += t.unique - got + t.foreign;
            } else {
                total.lost += sent;
            }
        }
        for t in self.trackers.iter().skip(sent_by_producer.len()) {
            unexpected += t.unique + t.foreign;
            total.duplicates += t.duplicates;
        }
        total.unexpected += unexpected;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settle(ledgers: &[SubscriberLedger], sent: &[u64]) -> Delivery {
        let mut d = Delivery::default();
        for l in ledgers {
            l.settle(sent, &mut d);
        }
        d
    }

    #[test]
    fn perfect_delivery() {
        let mut l = SubscriberLedger::default();
        for s in 0..1000 {
            assert_eq!(l.record(0, s), Arrival::New);
        }
        let d = settle(&[l], &[1000]);
        assert_eq!(
            d,
            Delivery {
                expected: 1000,
                received: 1000,
                ..Delivery::default()
            }
        );
    }

    #[test]
    fn injected_loss_is_counted_exactly() {
        let mut l = SubscriberLedger::default();
        let dropped = [0u64, 63, 64, 65, 500, 999];
        for s in (0..1000).filter(|s| !dropped.contains(s)) {
            l.record(0, s);
        }
        let d = settle(&[l], &[1000]);
        assert_eq!(d.lost, dropped.len() as u64);
        assert_eq!(d.received, 1000 - dropped.len() as u64);
        assert_eq!(d.reordered, 0);
    }

    #[test]
    fn tail_loss_and_total_loss() {
        let mut l = SubscriberLedger::default();
        for s in 0..10 {
            l.record(0, s);
        }
        // Producer 1 sent 5, none arrived; producer 0's last 90 were lost.
        let d = settle(&[l], &[100, 5]);
        assert_eq!(d.expected, 105);
        assert_eq!(d.lost, 95);
    }

    #[test]
    fn injected_duplicates() {
        let mut l = SubscriberLedger::default();
        for s in 0..100 {
            l.record(0, s);
            if s % 10 == 0 {
                assert_eq!(l.record(0, s), Arrival::Duplicate);
            }
        }
        let d = settle(&[l], &[100]);
        assert_eq!(d.duplicates, 10);
        assert_eq!(d.lost, 0);
        assert_eq!(d.received, 100);
    }

    #[test]
    fn injected_reordering() {
        let mut l = SubscriberLedger::default();
        // Swap every pair: 1,0,3,2,... -> 50 late arrivals.
        for p in 0..50u64 {
            assert_eq!(l.record(0, 2 * p + 1), Arrival::New);
            assert_eq!(l.record(0, 2 * p), Arrival::Reordered);
        }
        let d = settle(&[l], &[100]);
        assert_eq!(d.reordered, 50);
        assert_eq!(d.lost, 0);
        assert_eq!(d.duplicates, 0);
    }

    #[test]
    fn mixed_faults_across_producers_and_subscribers() {
        let mut rng = fastrand::Rng::with_seed(42);
        let sent = [500u64, 300, 200];
        let mut ledgers = vec![SubscriberLedger::default(); 4];
        let (mut lost, mut dup) = (0u64, 0u64);
        for l in ledgers.iter_mut() {
            for (p, &n) in sent.iter().enumerate() {
                let mut order: Vec<u64> = (0..n).collect();
                rng.shuffle(&mut order[..]);
                for s in order {
                    match rng.u8(0..20) {
                        0 => lost += 1,
                        1 => {
                            l.record(p as u32, s);
                            l.record(p as u32, s);
                            dup += 1;
                        }
                        _ => {
                            l.record(p as u32, s);
                        }
                    }
                }
            }
        }
        let d = settle(&ledgers, &sent);
        assert_eq!(d.expected, 4000);
        assert_eq!(d.lost, lost);
        assert_eq!(d.duplicates, dup);
        assert_eq!(d.received + d.lost, d.expected);
        assert!(d.reordered > 0);
    }

    #[test]
    fn a_late_joiner_tracks_from_where_it_joined() {
        let mut t = SeqTracker::default();
        let start = 1u64 << 40;
        for s in (start..start + 1000).rev() {
            t.record(s);
        }
        assert_eq!((t.unique, t.foreign), (1000, 0));
        assert!(t.seen.len() < 20, "{} words", t.seen.len());
        assert_eq!(t.unique_below(start + 500), 500);
        assert_eq!(t.unique_below(start), 0);
        assert_eq!(t.unique_below(3), 0);
    }

    /// `fogline sub` reads any payload of 20 bytes or more as a probe header: text made it
    /// allocate a bitset of petabytes and abort.
    #[test]
    fn numbers_far_from_the_window_are_foreign_and_cost_nothing() {
        let mut l = SubscriberLedger::default();
        let text = b"000001-000001-000001-000001-";
        for k in 0..1000u64 {
            let seq = u64::from_le_bytes(text[4..12].try_into().unwrap()) ^ (k << 50);
            l.record(0, seq);
        }
        assert_eq!(l.record(u32::MAX, 1), Arrival::Foreign);
        assert!(l.trackers.len() == 1 && l.trackers[0].seen.len() <= 1);
        let d = settle(&[l], &[0]);
        assert_eq!(d.unexpected, 1001);
    }

    #[test]
    fn numbers_never_sent_are_unexpected() {
        let mut l = SubscriberLedger::default();
        l.record(0, 0);
        l.record(0, 10);
        l.record(3, 0);
        l.record_unexpected();
        let d = settle(&[l], &[1]);
        assert_eq!(d.received, 1);
        assert_eq!(d.unexpected, 3);
    }
}
