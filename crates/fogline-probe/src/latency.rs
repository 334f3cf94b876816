//! Latency recording in an HDR histogram (nanoseconds, 3 significant digits).

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The largest latency kept apart: one hour.
const MAX_NS: u64 = 3_600_000_000_000;

/// Latencies of one run, mergeable across subscribers.
#[derive(Debug, Clone)]
pub struct LatencyRecorder {
    hist: Histogram<u64>,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyRecorder {
    /// An empty recorder for 1 ns to 1 hour (longer values count as 1 hour).
    pub fn new() -> Self {
        // Only bad bounds or a precision above 5 digits are errors; these are constants.
        let hist = Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds");
        Self { hist }
    }

    /// Records one latency in nanoseconds.
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
    }

    /// Adds another recorder's values.
    pub fn merge(&mut self, other: &LatencyRecorder) {
        // Same bounds on both sides, so adding cannot fail; saturate value by value if it does.
        if self.hist.add(&other.hist).is_err() {
            for v in other.hist.iter_recorded() {
                self.hist
                    .saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
    }

    /// Number of values recorded.
    pub fn len(&self) -> u64 {
        self.hist.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// The summary in microseconds.
    pub fn summary(&self) -> LatencySummary {
        let q = |p: f64| self.hist.value_at_quantile(p) as f64 / 1000.0;
        LatencySummary {
            count: self.hist.len(),
            min_us: self.hist.min() as f64 / 1000.0,
            p50_us: q(0.50),
            p90_us: q(0.90),
            p99_us: q(0.99),
            p999_us: q(0.999),
            max_us: self.hist.max() as f64 / 1000.0,
            mean_us: self.hist.mean() / 1000.0,
        }
    }
}

/// Latency percentiles of a run, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Values recorded.
    pub count: u64,
    /// Minimum.
    pub min_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Maximum.
    pub max_us: f64,
    /// Mean.
    pub mean_us: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_uniform_spread() {
        let mut r = LatencyRecorder::new();
        for us in 1..=1000u64 {
            r.record(us * 1000);
        }
        let s = r.summary();
        assert_eq!(s.count, 1000);
        assert!((s.p50_us - 500.0).abs() < 1.0, "{s:?}");
        assert!((s.p99_us - 990.0).abs() < 1.0, "{s:?}");
        assert!((s.max_us - 1000.0).abs() < 1.0, "{s:?}");
    }

    #[test]
    fn merge_adds_counts() {
        let mut a = LatencyRecorder::new();
        let mut b = LatencyRecorder::new();
        a.record(1_000);
        b.record(10_000_000_000);
        a.merge(&b);
        assert_eq!(a.len(), 2);
        assert!(a.summary().max_us > 9_000_000.0);
    }
}
