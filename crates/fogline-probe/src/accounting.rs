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
}

/// The arrivals of one producer's stream at one subscriber.
#[derive(Debug, Default, Clone)]
pub struct SeqTracker {
    seen: Vec<u64>,
    unique: u64,
    duplicates: u64,
    reordered: u64,
    highest: Option<u64>,
}

impl SeqTracker {
    /// Records the arrival of `seq`.
    pub fn record(&mut self, seq: u64) -> Arrival {
        let word = (seq / 64) as usize;
        let bit = 1u64 << (seq % 64);
        if word >= self.seen.len() {
            self.seen.resize(word + 1, 0);
        }
        if self.seen[word] & bit != 0 {
            self.duplicates += 1;
            return Arrival::Duplicate;
        }
        self.seen[word] |= bit;
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
        let full = (sent / 64) as usize;
        let mut n: u64 = self
            .seen
            .iter()
            .take(full)
            .map(|w| u64::from(w.count_ones()))
            .sum();
        let rem = sent % 64;
        if rem > 0 {
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
                unexpected += t.unique - got;
            } else {
                total.lost += sent;
            }
        }
        for t in self.trackers.iter().skip(sent_by_producer.len()) {
            unexpected += t.unique;
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
