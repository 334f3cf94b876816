//! Windowed Gaussian, as NAB describes its baseline: the score of a point is
//! `1 - Q(|x - mean| / std)` with mean and (population) standard deviation of a
//! window of earlier points. The window fills up to `window` points (statistics
//! refreshed on every point); once full it slides by `step` points at a time
//! (statistics refreshed per slide). The first point scores 0. State: a ring of
//! `window` values plus a buffer of `step` values.

use super::stats::{normal_tail, unit};
use super::Detector;
use std::collections::VecDeque;

/// Windowed Gaussian detector.
#[derive(Debug, Clone)]
pub struct WindowedGaussian {
    window: usize,
    step: usize,
    data: VecDeque<f64>,
    pending: Vec<f64>,
    sum: f64,
    sum_sq: f64,
    mean: f64,
    std: f64,
}

impl WindowedGaussian {
    /// `window` and `step` in points (`step <= window`, both at least 1).
    pub fn new(window: usize, step: usize) -> WindowedGaussian {
        let window = window.max(1);
        let step = step.clamp(1, window);
        WindowedGaussian {
            window,
            step,
            data: VecDeque::with_capacity(window),
            pending: Vec::with_capacity(step),
            sum: 0.0,
            sum_sq: 0.0,
            mean: 0.0,
            std: 1.0,
        }
    }

    fn refresh_from_sums(&mut self) {
        let n = self.data.len() as f64;
        self.mean = self.sum / n;
        let var = (self.sum_sq / n - self.mean * self.mean).max(0.0);
        self.std = if var > 0.0 { var.sqrt() } else { 1e-6 };
    }

    fn refresh_exact(&mut self) {
        let n = self.data.len() as f64;
        self.sum = self.data.iter().sum();
        self.mean = self.sum / n;
        let var = self
            .data
            .iter()
            .map(|x| (x - self.mean) * (x - self.mean))
            .sum::<f64>()
            / n;
        self.sum_sq = self.data.iter().map(|x| x * x).sum();
        self.std = if var > 0.0 { var.sqrt() } else { 1e-6 };
    }
}

impl Default for WindowedGaussian {
    /// NAB's parameters: `window = 6400`, `step = 100`.
    fn default() -> WindowedGaussian {
        WindowedGaussian::new(6400, 100)
    }
}

impl Detector for WindowedGaussian {
    fn update(&mut self, _timestamp: i64, value: f64) -> f64 {
        if !value.is_finite() {
            return 0.0;
        }
        let score = if self.data.is_empty() {
            0.0
        } else {
            1.0 - normal_tail((value - self.mean) / self.std)
        };
        if self.data.len() < self.window {
            self.data.push_back(value);
            self.sum += value;
            self.sum_sq += value * value;
            // Running sums are exact enough while filling; recompute exactly
            // every `step` points to shed rounding error.
            if self.data.len() % self.step == 0 {
                self.refresh_exact();
            } else {
                self.refresh_from_sums();
            }
        } else {
            self.pending.push(value);
            if self.pending.len() == self.step {
                self.data.drain(..self.step);
                self.data.extend(self.pending.drain(..));
                self.refresh_exact();
            }
        }
        unit(score)
    }

    fn reset(&mut self) {
        *self = WindowedGaussian::new(self.window, self.step);
    }

    fn state_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + 8 * (self.data.capacity() + self.pending.capacity())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{check_contract, run_step};
    use super::*;

    #[test]
    fn contract() {
        check_contract(&mut WindowedGaussian::new(500, 10));
        check_contract(&mut WindowedGaussian::default());
    }

    #[test]
    fn matches_direct_computation() {
        // Window 4, step 2: after 4 points the window is [1, 2, 3, 4].
        let mut d = WindowedGaussian::new(4, 2);
        for (i, x) in [1.0, 2.0, 3.0, 4.0].into_iter().enumerate() {
            d.update(i as i64, x);
        }
        let (mean, std) = (2.5, 1.25f64.sqrt());
        let s = d.update(4, 5.0);
        assert!((s - (1.0 - normal_tail((5.0 - mean) / std))).abs() < 1e-12);
        // 5 and 6 fill the step; the window slides to [3, 4, 5, 6].
        d.update(5, 6.0);
        let s = d.update(6, 4.5);
        assert!((s - (1.0 - normal_tail(0.0))).abs() < 1e-12);
    }

    #[test]
    fn flags_a_step() {
        let s = run_step(&mut WindowedGaussian::new(1000, 10), 3000, 2000);
        assert!(s[2000] > 0.999_999);
    }
}
