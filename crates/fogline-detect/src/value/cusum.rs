//! Two-sided CUSUM on standardised values. Each point is standardised against a
//! slow EWMA mean and variance of the points before it; the upper and lower sums
//! `S+ = max(0, S+ + z - k)`, `S- = max(0, S- - z - k)` accumulate drift beyond
//! `k` standard deviations. Score `1 - exp(-max(S+, S-) / h)`; crossing `h`
//! raises an alarm and restarts both sums, so a lasting shift alarms once and
//! then is learned. State: a handful of numbers.

use super::stats::{unit, EwStats};
use super::Detector;

/// CUSUM detector.
#[derive(Debug, Clone)]
pub struct Cusum {
    k: f64,
    h: f64,
    alpha: f64,
    warmup: u64,
    stats: EwStats,
    up: f64,
    down: f64,
}

impl Cusum {
    /// `k`: slack in standard deviations; `h`: alarm level; `alpha`: smoothing of
    /// the reference mean and variance; `warmup`: points scored 0 first.
    pub fn new(k: f64, h: f64, alpha: f64, warmup: u64) -> Cusum {
        Cusum {
            k,
            h,
            alpha,
            warmup,
            stats: EwStats::new(alpha),
            up: 0.0,
            down: 0.0,
        }
    }
}

impl Default for Cusum {
    /// `k = 1`, `h = 8`, `alpha = 0.002`, `warmup = 100` (chosen on NAB).
    fn default() -> Cusum {
        Cusum::new(1.0, 8.0, 0.002, 100)
    }
}

impl Detector for Cusum {
    fn update(&mut self, _timestamp: i64, value: f64) -> f64 {
        if !value.is_finite() {
            return 0.0;
        }
        let floor = 1e-6 * (1.0 + self.stats.mean.abs());
        let z = self.stats.z(value, floor).clamp(-1e6, 1e6);
        self.stats.push(value);
        if self.stats.n <= self.warmup {
            return 0.0;
        }
        self.up = (self.up + z - self.k).max(0.0);
        self.down = (self.down - z - self.k).max(0.0);
        let s = self.up.max(self.down);
        if s > self.h {
            self.up = 0.0;
            self.down = 0.0;
        }
        unit(1.0 - (-s / self.h).exp())
    }

    fn reset(&mut self) {
        *self = Cusum::new(self.k, self.h, self.alpha, self.warmup);
    }

    fn state_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::check_contract;
    use super::*;

    #[test]
    fn contract() {
        check_contract(&mut Cusum::default());
    }

    #[test]
    fn small_shift_accumulates() {
        // A 1-sigma shift is invisible point by point but CUSUM sums it up.
        let mut d = Cusum::new(0.5, 5.0, 0.001, 50);
        let mut rng = super::super::testutil::Rng(3);
        let scores: Vec<f64> = (0..3000)
            .map(|i| d.update(i, if i >= 2000 { 1.0 } else { 0.0 } + rng.normal()))
            .collect();
        let before = scores[500..2000].iter().cloned().fold(0.0, f64::max);
        let after = scores[2000..2100].iter().cloned().fold(0.0, f64::max);
        assert!(after > 0.6, "after {after}");
        assert!(after > before, "before {before} after {after}");
    }
}
