//! Inter-arrival curves.
//!
//! Model: for each event type and each `k` in `2..=K`, the minimum `lo[k]` and
//! maximum `hi[k]` of `t[i + k - 1] - t[i]` over all runs of `k` consecutive
//! events of that type in the normal traces. Monitor: for each new event of a
//! type, the spans of the last `k` events must lie in
//! `[lo[k] * (1 - slack), hi[k] * (1 + slack)]`; between events, a type silent
//! for longer than `hi[2] * (1 + slack)` is missing. An event type never seen in
//! training is a violation. State per type: `K` timestamps and `2K` bounds.

use super::Event;
use std::collections::HashMap;

/// Learned curves for all event types.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrivalCurves {
    k: usize,
    curves: HashMap<u16, Vec<(u64, u64)>>,
}

/// What a violation was.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ViolationKind {
    /// `k` events came closer together than ever seen.
    TooClose,
    /// `k` events spread further apart than ever seen.
    TooFar,
    /// No event of this type for longer than the largest learned gap.
    Missing,
    /// An event type absent from training.
    Unknown,
}

/// One violation of the learned curves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Violation {
    /// Event type concerned.
    pub event_kind: u16,
    /// What happened.
    pub kind: ViolationKind,
    /// Number of consecutive events whose span broke a bound (0 for `Unknown`).
    pub k: usize,
    /// Relative distance beyond the bound (`Unknown`: 1).
    pub excess: f64,
}

impl ArrivalCurves {
    /// Learns curves with `k = 2..=max_k` from normal traces.
    pub fn learn<'a>(traces: impl IntoIterator<Item = &'a [Event]>, max_k: usize) -> ArrivalCurves {
        let k = max_k.max(2);
        let mut curves: HashMap<u16, Vec<(u64, u64)>> = HashMap::new();
        for trace in traces {
            let mut recent: HashMap<u16, Vec<u64>> = HashMap::new();
            for e in trace {
                let times = recent.entry(e.kind).or_default();
                times.push(e.time);
                if times.len() > k {
                    times.remove(0);
                }
                let bounds = curves
                    .entry(e.kind)
                    .or_insert_with(|| vec![(u64::MAX, 0); k + 1]);
                for j in 2..=times.len() {
                    let span = e.time - times[times.len() - j];
                    let b = &mut bounds[j];
                    *b = (b.0.min(span), b.1.max(span));
                }
            }
        }
        ArrivalCurves { k, curves }
    }

    /// Event types with a curve.
    pub fn kinds(&self) -> usize {
        self.curves.len()
    }
}

/// Online monitor against [`ArrivalCurves`].
#[derive(Debug, Clone)]
pub struct ArrivalMonitor {
    curves: ArrivalCurves,
    slack: f64,
    recent: HashMap<u16, (Vec<u64>, bool)>,
}

impl ArrivalMonitor {
    /// `slack`: relative tolerance on every bound (0.05 = 5 %).
    pub fn new(curves: ArrivalCurves, slack: f64) -> ArrivalMonitor {
        let recent = curves
            .curves
            .keys()
            .map(|&c| (c, (Vec::with_capacity(curves.k), false)))
            .collect();
        ArrivalMonitor {
            curves,
            slack,
            recent,
        }
    }

    /// Checks one event; returns the worst violation it reveals, if any.
    pub fn observe(&mut self, e: Event) -> Option<Violation> {
        let mut worst: Option<Violation> = None;
        let mut keep = |v: Violation| {
            if worst.is_none_or(|w| v.excess > w.excess) {
                worst = Some(v);
            }
        };
        // Silences of every type, checked at this event's time (once per gap).
        for (&c, (times, reported)) in self.recent.iter_mut() {
            let (Some(&last), Some(b)) = (times.last(), self.curves.curves.get(&c)) else {
                continue;
            };
            let limit = b[2].1 as f64 * (1.0 + self.slack);
            let gap = e.time.saturating_sub(last) as f64;
            if c != e.kind && !*reported && gap > limit && limit > 0.0 {
                *reported = true;
                keep(Violation {
                    event_kind: c,
                    kind: ViolationKind::Missing,
                    k: 2,
                    excess: gap / limit - 1.0,
                });
            }
        }
        let Some(bounds) = self.curves.curves.get(&e.kind) else {
            return Some(Violation {
                event_kind: e.kind,
                kind: ViolationKind::Unknown,
                k: 0,
                excess: 1.0,
            });
        };
        let (times, reported) = self.recent.entry(e.kind).or_default();
        *reported = false;
        times.push(e.time);
        if times.len() > self.curves.k {
            times.remove(0);
        }
        for j in 2..=times.len() {
            let span = (e.time - times[times.len() - j]) as f64;
            let (lo, hi) = bounds[j];
            let (lo, hi) = (
                lo as f64 * (1.0 - self.slack),
                hi as f64 * (1.0 + self.slack),
            );
            if span < lo {
                keep(Violation {
                    event_kind: e.kind,
                    kind: ViolationKind::TooClose,
                    k: j,
                    excess: (lo - span) / lo.max(1.0),
                });
            } else if span > hi {
                keep(Violation {
                    event_kind: e.kind,
                    kind: ViolationKind::TooFar,
                    k: j,
                    excess: (span - hi) / hi.max(1.0),
                });
            }
        }
        worst
    }

    /// Forgets the recent events (the learned curves stay).
    pub fn reset(&mut self) {
        for (times, reported) in self.recent.values_mut() {
            times.clear();
            *reported = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn periodic(kind: u16, period: u64, n: u64) -> Vec<Event> {
        (0..n)
            .map(|i| Event {
                time: i * period,
                kind,
            })
            .collect()
    }

    #[test]
    fn learns_exact_spans_of_a_periodic_stream() {
        let t = periodic(1, 10, 50);
        let c = ArrivalCurves::learn([t.as_slice()], 4);
        assert_eq!(c.curves[&1][2], (10, 10));
        assert_eq!(c.curves[&1][4], (30, 30));
    }

    #[test]
    fn flags_extra_missing_and_unknown_events() {
        let t = periodic(1, 10, 50);
        let c = ArrivalCurves::learn([t.as_slice()], 4);
        let mut m = ArrivalMonitor::new(c, 0.05);
        for e in &t[..20] {
            assert_eq!(m.observe(*e), None);
        }
        // An extra event 5 ns after the last one.
        let v = m.observe(Event { time: 195, kind: 1 }).unwrap();
        assert_eq!(v.kind, ViolationKind::TooClose);
        m.reset();
        m.observe(Event {
            time: 1000,
            kind: 1,
        });
        // Next event 30 ns later: two events are missing.
        let v = m
            .observe(Event {
                time: 1030,
                kind: 1,
            })
            .unwrap();
        assert_eq!(v.kind, ViolationKind::TooFar);
        assert!((v.excess - (30.0 / 10.5 - 1.0)).abs() < 1e-9);
        let v = m
            .observe(Event {
                time: 1031,
                kind: 9,
            })
            .unwrap();
        assert_eq!(v.kind, ViolationKind::Unknown);
    }

    #[test]
    fn reset_replays_identically() {
        let t = periodic(1, 10, 50);
        let c = ArrivalCurves::learn([t.as_slice()], 4);
        let mut test = t.clone();
        test.insert(25, Event { time: 245, kind: 1 });
        let mut m = ArrivalMonitor::new(c, 0.05);
        let first: Vec<_> = test.iter().map(|e| m.observe(*e)).collect();
        m.reset();
        let again: Vec<_> = test.iter().map(|e| m.observe(*e)).collect();
        assert_eq!(first, again);
        assert!(first.iter().any(Option::is_some));
    }

    #[test]
    fn silence_of_another_type_is_missing() {
        let mut t = periodic(1, 10, 50);
        t.extend(periodic(2, 7, 70));
        t.sort_by_key(|e| e.time);
        let c = ArrivalCurves::learn([t.as_slice()], 3);
        let mut m = ArrivalMonitor::new(c, 0.0);
        m.observe(Event { time: 0, kind: 1 });
        m.observe(Event { time: 0, kind: 2 });
        // Type 2 keeps coming, type 1 stops.
        let mut missing = 0;
        for i in 1..10 {
            if let Some(v) = m.observe(Event {
                time: i * 7,
                kind: 2,
            }) {
                assert_eq!((v.kind, v.event_kind), (ViolationKind::Missing, 1));
                missing += 1;
            }
        }
        assert_eq!(missing, 1, "reported once per gap");
    }
}
