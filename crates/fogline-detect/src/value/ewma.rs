//! EWMA z-score: the score of a point is the two-sided normal probability mass
//! within its z-score against an exponentially weighted mean and variance of the
//! points before it, `1 - 2 Q(|z|)`. State: three numbers.

use super::stats::{normal_tail, unit, EwStats};
use super::Detector;

/// EWMA z-score detector.
#[derive(Debug, Clone)]
pub struct Ewma {
    alpha: f64,
    warmup: u64,
    stats: EwStats,
}

impl Ewma {
    /// `alpha`: smoothing factor in (0, 1]; `warmup`: points scored 0 while the
    /// statistics settle.
    pub fn new(alpha: f64, warmup: u64) -> Ewma {
        Ewma {
            alpha,
            warmup,
            stats: EwStats::new(alpha),
        }
    }
}

impl Default for Ewma {
    /// `alpha = 0.002`, `warmup = 100` (chosen on NAB).
    fn default() -> Ewma {
        Ewma::new(0.002, 100)
    }
}

impl Detector for Ewma {
    fn update(&mut self, _timestamp: i64, value: f64) -> f64 {
        if !value.is_finite() {
            return 0.0;
        }
        let floor = 1e-6 * (1.0 + self.stats.mean.abs());
        let z = self.stats.z(value, floor);
        let score = if self.stats.n < self.warmup {
            0.0
        } else {
            1.0 - 2.0 * normal_tail(z)
        };
        self.stats.push(value);
        unit(score)
    }

    fn reset(&mut self) {
        self.stats = EwStats::new(self.alpha);
    }

    fn state_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{check_contract, run_step};
    use super::*;

    #[test]
    fn contract() {
        check_contract(&mut Ewma::default());
    }

    #[test]
    fn flags_a_step() {
        let s = run_step(&mut Ewma::new(0.01, 50), 3000, 2000);
        assert!(s[2000] > 0.999_999);
        let calm = s[1000..2000].iter().cloned().fold(0.0, f64::max);
        assert!(calm < 0.9999, "calm max {calm}");
    }
}
