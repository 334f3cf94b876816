//! Relative-entropy test with multiple hypotheses (Wang et al., "Statistical
//! techniques for online anomaly detection in data centers", IM 2011, Fig. 1), as
//! NAB's baseline describes it, made online: values are quantised into `bins`
//! equal bins over the range seen so far (NAB uses the whole file's range); the
//! histogram of the last `window` values is tested against every stored
//! hypothesis with `2 * window * KL(current || hypothesis) < T`, `T` the 0.99
//! point of chi-square with `bins - 1` degrees of freedom. No hypothesis accepts:
//! score 1 and the histogram becomes a new hypothesis; the best one accepts but
//! has been seen at most `c_th` times: score 1; otherwise 0.
//!
//! State: a ring of `window` values and at most `max_hypotheses` histograms
//! (when full, the least used hypothesis is replaced).

use super::Detector;
use std::collections::VecDeque;

/// 0.99 quantile of chi-square with 4 degrees of freedom (for 5 bins).
const CHI2_099_DF4: f64 = 13.276_704_135_987_6;

/// Relative-entropy detector (5 bins).
#[derive(Debug, Clone)]
pub struct RelativeEntropy {
    window: usize,
    c_th: u32,
    max_hypotheses: usize,
    values: VecDeque<f64>,
    min: f64,
    max: f64,
    hypotheses: Vec<([f64; BINS], u32)>,
}

const BINS: usize = 5;

impl RelativeEntropy {
    /// `window`: points per histogram; `c_th`: a hypothesis seen this often or
    /// less is still anomalous; `max_hypotheses`: memory bound.
    pub fn new(window: usize, c_th: u32, max_hypotheses: usize) -> RelativeEntropy {
        RelativeEntropy {
            window: window.max(1),
            c_th,
            max_hypotheses: max_hypotheses.max(1),
            values: VecDeque::with_capacity(window.max(1)),
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            hypotheses: Vec::with_capacity(max_hypotheses.max(1)),
        }
    }

    fn histogram(&self) -> [f64; BINS] {
        let mut h = [0.0; BINS];
        let step = (self.max - self.min) / BINS as f64;
        for &v in &self.values {
            let b = ((v - self.min) / step).floor();
            let b = if b.is_finite() {
                (b.max(0.0) as usize).min(BINS - 1)
            } else {
                0
            };
            h[b] += 1.0;
        }
        let n = self.values.len() as f64;
        h.iter_mut().for_each(|x| *x /= n);
        h
    }

    fn statistic(&self, p: &[f64; BINS], q: &[f64; BINS]) -> f64 {
        let kl: f64 = p
            .iter()
            .zip(q)
            .filter(|(pi, _)| **pi > 0.0)
            .map(|(pi, qi)| {
                if *qi > 0.0 {
                    pi * (pi / qi).ln()
                } else {
                    f64::INFINITY
                }
            })
            .sum();
        2.0 * self.window as f64 * kl
    }
}

impl Default for RelativeEntropy {
    /// NAB's parameters: `window = 52`, `c_th = 1`; at most 64 hypotheses.
    fn default() -> RelativeEntropy {
        RelativeEntropy::new(52, 1, 64)
    }
}

impl Detector for RelativeEntropy {
    fn update(&mut self, _timestamp: i64, value: f64) -> f64 {
        if !value.is_finite() {
            return 0.0;
        }
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        if self.values.len() == self.window {
            self.values.pop_front();
        }
        self.values.push_back(value);
        if self.values.len() < self.window
            || self.max - self.min <= 0.0
            || !(self.max - self.min).is_finite()
        {
            return 0.0;
        }
        let p = self.histogram();
        if self.hypotheses.is_empty() {
            self.hypotheses.push((p, 1));
            return 0.0;
        }
        let best = self
            .hypotheses
            .iter()
            .enumerate()
            .map(|(i, (q, _))| (i, self.statistic(&p, q)))
            .filter(|(_, s)| *s < CHI2_099_DF4)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        match best {
            Some((i, _)) => {
                self.hypotheses[i].1 = self.hypotheses[i].1.saturating_add(1);
                if self.hypotheses[i].1 <= self.c_th {
                    1.0
                } else {
                    0.0
                }
            }
            None => {
                if self.hypotheses.len() == self.max_hypotheses {
                    let least = self
                        .hypotheses
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, h)| h.1)
                        .map_or(0, |(i, _)| i);
                    self.hypotheses.swap_remove(least);
                }
                self.hypotheses.push((p, 1));
                1.0
            }
        }
    }

    fn reset(&mut self) {
        *self = RelativeEntropy::new(self.window, self.c_th, self.max_hypotheses);
    }

    fn state_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + 8 * self.values.capacity()
            + self.hypotheses.capacity() * std::mem::size_of::<([f64; BINS], u32)>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{check_contract, Rng};
    use super::*;

    #[test]
    fn contract() {
        check_contract(&mut RelativeEntropy::default());
    }

    #[test]
    fn new_distribution_is_anomalous_then_learned() {
        let mut d = RelativeEntropy::new(50, 1, 8);
        let mut rng = Rng(5);
        // Uniform over [0, 10) then over [0, 2): a new histogram shape.
        let mut scores = Vec::new();
        for i in 0..4000 {
            let v = if i < 2000 {
                rng.uniform() * 10.0
            } else {
                rng.uniform() * 2.0
            };
            scores.push(d.update(i, v));
        }
        let late_calm: f64 = scores[1000..2000].iter().sum();
        let change: f64 = scores[2000..2100].iter().sum();
        let learned: f64 = scores[3000..4000].iter().sum();
        assert!(change >= 1.0, "change {change}");
        assert!(
            late_calm <= 2.0 && learned <= 2.0,
            "calm {late_calm} learned {learned}"
        );
        assert!(d.hypotheses.len() <= 8);
    }
}
