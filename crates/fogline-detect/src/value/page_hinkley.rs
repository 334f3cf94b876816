//! Page-Hinkley test, two-sided. Values are standardised by the running mean and
//! standard deviation of the points since the last alarm; the cumulative sums
//! `m+ += z - delta` and `m- += -z - delta` are compared with their running
//! minima. Score `1 - exp(-PH / lambda)` with `PH` the larger gap; an alarm
//! (`PH > lambda`) restarts the test so a new level is learned. State: a handful
//! of numbers.

use super::stats::unit;
use super::Detector;

/// Page-Hinkley detector.
#[derive(Debug, Clone)]
pub struct PageHinkley {
    delta: f64,
    lambda: f64,
    warmup: u64,
    n: u64,
    mean: f64,
    m2: f64,
    up: f64,
    up_min: f64,
    down: f64,
    down_min: f64,
}

impl PageHinkley {
    /// `delta`: tolerated drift per point in standard deviations; `lambda`: alarm
    /// level; `warmup`: points after a (re)start scored 0.
    pub fn new(delta: f64, lambda: f64, warmup: u64) -> PageHinkley {
        PageHinkley {
            delta,
            lambda,
            warmup,
            n: 0,
            mean: 0.0,
            m2: 0.0,
            up: 0.0,
            up_min: 0.0,
            down: 0.0,
            down_min: 0.0,
        }
    }

    fn restart(&mut self) {
        *self = PageHinkley::new(self.delta, self.lambda, self.warmup);
    }
}

impl Default for PageHinkley {
    /// `delta = 0.5`, `lambda = 20`, `warmup = 50` (chosen on NAB).
    fn default() -> PageHinkley {
        PageHinkley::new(0.5, 20.0, 50)
    }
}

impl Detector for PageHinkley {
    fn update(&mut self, _timestamp: i64, value: f64) -> f64 {
        if !value.is_finite() {
            return 0.0;
        }
        self.n += 1;
        let d = value - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (value - self.mean);
        if self.n <= self.warmup {
            return 0.0;
        }
        let sd = (self.m2 / (self.n - 1) as f64)
            .sqrt()
            .max(1e-6 * (1.0 + self.mean.abs()));
        let z = ((value - self.mean) / sd).clamp(-1e6, 1e6);
        self.up += z - self.delta;
        self.up_min = self.up_min.min(self.up);
        self.down += -z - self.delta;
        self.down_min = self.down_min.min(self.down);
        let ph = (self.up - self.up_min).max(self.down - self.down_min);
        if ph > self.lambda || !ph.is_finite() {
            self.restart();
        }
        unit(1.0 - (-ph / self.lambda).exp())
    }

    fn reset(&mut self) {
        self.restart();
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
        check_contract(&mut PageHinkley::default());
    }

    #[test]
    fn flags_a_step_once() {
        let s = run_step(&mut PageHinkley::new(0.5, 20.0, 50), 3000, 2000);
        let alarm = s[2000..2050]
            .iter()
            .position(|&x| x > 1.0 - (-1.0f64).exp())
            .expect("alarm after the step");
        assert!(alarm < 20, "alarm at +{alarm}");
        let calm = s[100..2000].iter().cloned().fold(0.0, f64::max);
        assert!(calm < 0.63, "calm max {calm}");
    }
}
