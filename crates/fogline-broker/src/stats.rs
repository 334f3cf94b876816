//! Counters the broker keeps for the admin API, the metrics and `$SYS`.
//!
//! All of them are relaxed atomics bumped on the paths that already touch the batch, read at
//! scrape time: no lock, no allocation, nothing per record. Per-connection counters live in
//! [`crate::clients`], per-stream ones on the [`Stream`](crate::Stream).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Why records never reached a subscriber that wanted them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// A full subscription queue under the `drop-oldest` policy dropped its oldest records.
    QueueFull,
    /// A subscriber was cut off as slow; what its queue held was discarded.
    SlowConsumer,
    /// An MQTT session held `max_queued` messages: the oldest (or QoS 0) ones were dropped.
    SessionFull,
    /// An MQTT message expired (its Message Expiry Interval) before it could be sent.
    Expired,
}

impl DropReason {
    /// Every reason, in a fixed order.
    pub const ALL: [DropReason; 4] = [
        DropReason::QueueFull,
        DropReason::SlowConsumer,
        DropReason::SessionFull,
        DropReason::Expired,
    ];

    /// The metric label: `queue_full`, `slow_consumer`, `session_full`, `expired`.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue_full",
            DropReason::SlowConsumer => "slow_consumer",
            DropReason::SessionFull => "session_full",
            DropReason::Expired => "expired",
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// What it means, for the log.
    pub fn describe(self) -> &'static str {
        match self {
            DropReason::QueueFull => {
                "a subscription's queue was full under the drop-oldest policy: its oldest records were dropped"
            }
            DropReason::SlowConsumer => {
                "a subscriber was cut off as slow: the records its queue held were discarded"
            }
            DropReason::SessionFull => {
                "an MQTT session held max_queued messages: its oldest (or QoS 0) messages were dropped"
            }
            DropReason::Expired => "MQTT messages expired before they could be sent",
        }
    }
}

/// Least time between two warnings of one kind: every drop and every disconnect is counted
/// at once, and reported in the log at most this often, with the count since the last report
/// (a subscriber losing messages on every publish must not flood the log).
pub const REPORT_INTERVAL_US: u64 = 10_000_000;

/// Counts events of one kind and warns about them at most every [`REPORT_INTERVAL_US`].
#[derive(Debug, Default)]
struct Reporter {
    /// When the last warning went out (microseconds since the epoch; 0: never).
    last_us: AtomicU64,
    /// Events since then.
    unreported: AtomicU64,
}

impl Reporter {
    /// Adds `n` events; returns how many to report now (with this call's), if a report is
    /// due: the first event ever, or the first after the interval.
    fn add(&self, n: u64, now_us: u64) -> Option<u64> {
        self.unreported.fetch_add(n, Relaxed);
        let last = self.last_us.load(Relaxed);
        if last != 0 && now_us.saturating_sub(last) < REPORT_INTERVAL_US {
            return None;
        }
        // One reporter wins the interval.
        self.last_us
            .compare_exchange(last, now_us.max(1), Relaxed, Relaxed)
            .ok()?;
        Some(self.unreported.swap(0, Relaxed))
    }
}

/// Broker-wide counters.
#[derive(Debug, Default)]
pub struct BrokerStats {
    /// Records accepted by publish.
    pub records_in: AtomicU64,
    /// Bytes accepted by publish (record blocks and topics, as queues count them).
    pub bytes_in: AtomicU64,
    /// Batches accepted by publish.
    pub batches_in: AtomicU64,
    /// Subscribers cut off as slow consumers.
    pub slow_consumers: AtomicU64,
    /// Deliveries handed straight to an idle subscriber's sink (see
    /// [`Handoff::Direct`](crate::Handoff::Direct)).
    pub direct_deliveries: AtomicU64,
    /// Records queued for subscriptions by their interest profile (counted once per
    /// subscription that got them).
    pub profile_routed: AtomicU64,
    /// Record headers that could not be profile attributes (bad names, binary values).
    pub profile_skipped: AtomicU64,
    /// Producers announced (notify_interest) since the node started.
    pub announcements: AtomicU64,
    dropped: [AtomicU64; DropReason::ALL.len()],
    /// Durations of the flushes that make `fsync` streams' records durable.
    pub flushes: Histogram,
    drop_reports: [Reporter; DropReason::ALL.len()],
    cut_reports: Reporter,
}

impl BrokerStats {
    /// Counts `records` lost for `reason`, and warns about them (at most every
    /// [`REPORT_INTERVAL_US`] per reason).
    pub fn add_dropped(&self, reason: DropReason, records: u64) {
        if records == 0 {
            return;
        }
        self.dropped[reason.index()].fetch_add(records, Relaxed);
        let now = crate::batch::now_micros();
        if let Some(n) = self.drop_reports[reason.index()].add(records, now) {
            tracing::warn!(
                reason = reason.as_str(),
                records = n,
                total = self.dropped(reason),
                "records dropped since the last report: {}",
                reason.describe()
            );
        }
    }

    /// Counts a subscriber cut off as slow, and warns about it (at most every
    /// [`REPORT_INTERVAL_US`]; `who` names the latest).
    pub fn add_slow_consumer(&self, who: &dyn std::fmt::Display) {
        let total = self.slow_consumers.fetch_add(1, Relaxed) + 1;
        if let Some(n) = self.cut_reports.add(1, crate::batch::now_micros()) {
            tracing::warn!(
                subscribers = n,
                total,
                latest = %who,
                "subscribers cut off as slow consumers since the last report"
            );
        }
    }

    /// Records lost for `reason` so far.
    pub fn dropped(&self, reason: DropReason) -> u64 {
        self.dropped[reason.index()].load(Relaxed)
    }
}

/// Upper bounds of the flush histogram's buckets, in seconds: 50 us to 10 s, each about
/// 2.5 times the last (an SSD's flush takes tens of microseconds, an SD card's hundreds of
/// milliseconds).
pub const FLUSH_BUCKETS: [f64; 14] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
    10.0,
];

/// A fixed-bucket histogram of durations (Prometheus' shape: cumulative buckets, a sum and a
/// count, read at scrape time).
#[derive(Debug, Default)]
pub struct Histogram {
    /// Observations at or below each bound of [`FLUSH_BUCKETS`] (not cumulative here).
    buckets: [AtomicU64; FLUSH_BUCKETS.len()],
    count: AtomicU64,
    sum_ns: AtomicU64,
}

/// What a [`Histogram`] held when it was read.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramSnapshot {
    /// (upper bound in seconds, observations at or below it), cumulative.
    pub buckets: Vec<(f64, u64)>,
    /// Observations in all.
    pub count: u64,
    /// Their sum, in seconds.
    pub sum: f64,
}

impl Histogram {
    /// Records one duration.
    pub fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        if let Some(i) = FLUSH_BUCKETS.iter().position(|&b| secs <= b) {
            self.buckets[i].fetch_add(1, Relaxed);
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_ns
            .fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Relaxed);
    }

    /// The cumulative buckets, count and sum.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut total = 0;
        let buckets = FLUSH_BUCKETS
            .iter()
            .zip(&self.buckets)
            .map(|(&bound, n)| {
                total += n.load(Relaxed);
                (bound, total)
            })
            .collect();
        HistogramSnapshot {
            buckets,
            count: self.count.load(Relaxed),
            sum: self.sum_ns.load(Relaxed) as f64 / 1e9,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let h = Histogram::default();
        h.observe(Duration::from_micros(40));
        h.observe(Duration::from_micros(900));
        h.observe(Duration::from_secs(20));
        let s = h.snapshot();
        assert_eq!(s.count, 3);
        assert_eq!(s.buckets[0], (0.000_05, 1));
        assert_eq!(s.buckets[4], (0.001, 2));
        assert_eq!(
            s.buckets.last().map(|b| b.1),
            Some(2),
            "20 s is past the last bound"
        );
        assert!((s.sum - 20.000_94).abs() < 1e-9, "{}", s.sum);
    }

    #[test]
    fn drops_are_counted_by_reason() {
        let s = BrokerStats::default();
        s.add_dropped(DropReason::QueueFull, 3);
        s.add_dropped(DropReason::Expired, 1);
        s.add_dropped(DropReason::QueueFull, 2);
        assert_eq!(s.dropped(DropReason::QueueFull), 5);
        assert_eq!(s.dropped(DropReason::SlowConsumer), 0);
        assert_eq!(s.dropped(DropReason::Expired), 1);
    }

    #[test]
    fn reports_come_at_most_once_per_interval_and_lose_no_count() {
        let r = Reporter::default();
        let t0 = 1_000_000_000;
        assert_eq!(r.add(3, t0), Some(3), "the first event is reported at once");
        assert_eq!(r.add(2, t0 + 1), None);
        assert_eq!(r.add(4, t0 + REPORT_INTERVAL_US - 1), None);
        assert_eq!(r.add(1, t0 + REPORT_INTERVAL_US), Some(7));
        assert_eq!(r.add(1, t0 + REPORT_INTERVAL_US + 5), None);
    }
}
