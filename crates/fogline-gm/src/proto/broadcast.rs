//! The thesis' coordinator-free protocol (Paper II, sections 3.2.1 and 3.3.1).
//!
//! Every node keeps the last vector `v'_j` it heard from every node `j` (with `j`'s sequence
//! number), so every node computes the same estimate `e = (1/N) sum v'_j` once it has heard
//! everything. On a new reading a node checks its safe zone; if the zone is violated it
//! broadcasts its vector (a *regular* update). A receiver drops a sequence number it has seen,
//! otherwise stores the vector, recomputes `e` and re-checks its own zone with its stored
//! reading; if that now fails it broadcasts the stored reading (a *triggered* update). Nothing
//! repairs a loss: a receiver stays out of sync with an origin until the origin's next update.
//!
//! A node's first reading is always broadcast, so that every node starts with every vector;
//! until a node has heard from an origin it counts that origin at the centre reading (zero).
//! After a node has broadcast, its drift is zero and its zone is the point `e`, which is always
//! safe: each node sends at most one update per reading, and the cascade ends.
//!
//! Repair (not in the thesis): every update also carries the sender's sequence number for
//! every origin. A receiver that is still behind on some origin at the end of the epoch (so
//! not merely waiting for an update in flight) pulls the latest update of that origin from a
//! node that has it (two unicasts): a loss is repaired by the end of the epoch of the next
//! update from *anyone*, not only at the next update from the same origin.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::{drift, Dest, Msg, NodeId, Out, Participant};
use crate::function::{self, Function, Side};
use crate::zone::Zone;

/// When a node broadcasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// When its safe zone is violated (GM).
    Zone(Zone),
    /// At every reading (the thesis' baseline).
    Always,
    /// At every epoch that is a multiple of `k` (the periodic baseline).
    Every(u64),
}

/// A node of the broadcast protocol.
#[derive(Debug, Clone)]
pub struct BroadcastNode {
    id: NodeId,
    n: usize,
    f: Function,
    policy: Policy,
    /// `v'_j` and its sequence number (0: nothing heard yet).
    views: Vec<Option<Vec<i64>>>,
    seqs: Vec<u64>,
    heard: usize,
    sum: Vec<i128>,
    /// the current reading's local vector
    v: Option<Vec<i64>>,
    repair: bool,
    /// with repair: the highest sequence number heard of per origin, and who holds it
    heard_of: Vec<(u64, NodeId)>,
    /// With prediction: every origin's trend (the epoch of its update and its slope), this
    /// node's recent readings, and the epoch of its latest reading.
    trends: Option<Vec<Trend>>,
    recent: VecDeque<(u64, [i64; 2])>,
    epoch: u64,
}

/// A velocity model (Giatrakos et al., prediction-based GM): an origin's readings are
/// expected to go on along `slope` from the reading it sent at epoch `at`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trend {
    /// the epoch of the update
    pub at: u64,
    /// quanta per [`SLOPE_EPOCHS`] epochs, per channel (temperature, humidity)
    pub slope: [i64; 2],
}

/// The slope's fixed-point denominator: integer arithmetic keeps every node's prediction, and
/// so every node's estimate, bit for bit the same.
pub const SLOPE_EPOCHS: i64 = 1024;
/// Readings a node fits its slope to (about 10 minutes of 31 s epochs).
pub const TREND_WINDOW: usize = 20;
/// How far a prediction runs before it stops moving (about 31 minutes): predictions of
/// different slopes fan out with time, and past a turn of the weather a long one drags the
/// estimate away from the truth, which costs a burst of updates to correct.
pub const TREND_HORIZON: u64 = 60;

impl Trend {
    /// The reading predicted at `epoch` from `q`, sent at `self.at`.
    pub fn predict(&self, q: [i64; 2], epoch: u64) -> [i64; 2] {
        let dt = epoch.saturating_sub(self.at).min(TREND_HORIZON) as i64;
        [
            q[0] + (dt * self.slope[0]).div_euclid(SLOPE_EPOCHS),
            q[1] + (dt * self.slope[1]).div_euclid(SLOPE_EPOCHS),
        ]
    }

    /// The least-squares slope of `recent` readings, anchored at the latest.
    fn fit(recent: &VecDeque<(u64, [i64; 2])>) -> Trend {
        let at = recent.back().map_or(0, |r| r.0);
        let n = recent.len() as f64;
        if recent.len() < 2 {
            return Trend { at, slope: [0, 0] };
        }
        let tm = recent.iter().map(|r| r.0 as f64).sum::<f64>() / n;
        let stt: f64 = recent.iter().map(|r| (r.0 as f64 - tm).powi(2)).sum();
        let mut slope = [0i64; 2];
        for (c, s) in slope.iter_mut().enumerate() {
            let qm = recent.iter().map(|r| r.1[c] as f64).sum::<f64>() / n;
            let stq: f64 = recent
                .iter()
                .map(|r| (r.0 as f64 - tm) * (r.1[c] as f64 - qm))
                .sum();
            *s = (stq / stt * SLOPE_EPOCHS as f64).round() as i64;
        }
        Trend { at, slope }
    }
}

impl BroadcastNode {
    /// Node `id` of `n`.
    pub fn new(id: NodeId, n: usize, f: Function, policy: Policy) -> BroadcastNode {
        let d = f.dim();
        BroadcastNode {
            id,
            n,
            f,
            policy,
            views: vec![None; n],
            seqs: vec![0; n],
            heard: 0,
            sum: vec![0; d],
            v: None,
            repair: false,
            heard_of: vec![(0, 0); n],
            trends: None,
            recent: VecDeque::new(),
            epoch: 0,
        }
    }

    /// The same node, predicting every origin's readings along its trend.
    pub fn with_prediction(mut self) -> BroadcastNode {
        self.trends = Some(vec![Trend::default(); self.n]);
        self
    }

    /// The same node, with repair.
    pub fn with_repair(mut self) -> BroadcastNode {
        self.repair = true;
        self
    }

    fn update(&self, origin: NodeId, known: bool) -> Option<Msg> {
        Some(Msg::Update {
            origin,
            seq: self.seqs[origin],
            vector: self.views[origin].clone()?,
            known: if known { self.seqs.clone() } else { Vec::new() },
            trend: self.trends.as_ref().map(|t| t[origin]),
        })
    }

    fn store(&mut self, origin: NodeId, seq: u64, vector: &[i64]) {
        if let Some(old) = &self.views[origin] {
            for (s, x) in self.sum.iter_mut().zip(old) {
                *s -= *x as i128;
            }
        } else {
            self.heard += 1;
        }
        for (s, x) in self.sum.iter_mut().zip(vector) {
            *s += *x as i128;
        }
        self.views[origin] = Some(vector.to_vec());
        self.seqs[origin] = seq;
    }

    fn send(&mut self, out: &mut Vec<Out>) {
        let Some(v) = self.v.clone() else { return };
        let seq = self.seqs[self.id] + 1;
        if let Some(trends) = &mut self.trends {
            trends[self.id] = Trend::fit(&self.recent);
        }
        self.store(self.id, seq, &v);
        if let Some(msg) = self.update(self.id, self.repair) {
            out.push(Out {
                dest: Dest::All,
                msg,
            });
        }
    }

    /// Takes an update without re-checking the zone (lock-step rounds: a node takes every
    /// update of a round, then checks once with [`BroadcastNode::check`]); whether it was new.
    pub fn absorb(&mut self, msg: &Msg) -> bool {
        let Msg::Update {
            origin,
            seq,
            vector,
            trend,
            ..
        } = msg
        else {
            return false;
        };
        if *origin >= self.n || *origin == self.id || *seq <= self.seqs[*origin] {
            return false;
        }
        self.store(*origin, *seq, vector);
        self.take_trend(*origin, trend);
        true
    }

    /// Checks the zone and broadcasts the stored reading if it is violated (a triggered
    /// update).
    pub fn check(&mut self, out: &mut Vec<Out>) {
        if self.violated() {
            self.send(out);
        }
    }

    /// The sequence number this node holds for every origin.
    pub fn seqs(&self) -> &[u64] {
        &self.seqs
    }

    /// The sum of the vectors this node holds (predicted to its latest epoch), once it has
    /// sent its own.
    pub fn view_sum(&self) -> Option<Vec<i128>> {
        self.views[self.id].is_some().then(|| self.sum_now())
    }

    fn take_trend(&mut self, origin: NodeId, trend: &Option<Trend>) {
        if let Some(trends) = &mut self.trends {
            trends[origin] = trend.unwrap_or_default();
        }
    }

    /// Origin `j`'s vector as this node expects it now: its last vector, or with prediction
    /// the lift of its reading moved along its trend to this node's epoch.
    fn view_now(&self, j: NodeId) -> Option<Vec<i64>> {
        let v = self.views[j].as_ref()?;
        Some(match &self.trends {
            Some(t) => self.f.lift(t[j].predict(self.f.reading(v), self.epoch)),
            None => v.clone(),
        })
    }

    /// The sum the estimate is made of, now.
    fn sum_now(&self) -> Vec<i128> {
        if self.trends.is_none() {
            return self.sum.clone();
        }
        let mut sum = vec![0i128; self.f.dim()];
        for j in 0..self.n {
            if let Some(v) = self.view_now(j) {
                for (s, x) in sum.iter_mut().zip(&v) {
                    *s += *x as i128;
                }
            }
        }
        sum
    }

    /// Whether the local zone is violated.
    fn violated(&self) -> bool {
        let Policy::Zone(zone) = self.policy else {
            return false;
        };
        let (Some(v), Some(reference)) = (&self.v, self.view_now(self.id)) else {
            return false;
        };
        let sum = self.sum_now();
        let e = function::mean(&sum, self.n);
        let u = drift(&e, v, &reference, None);
        !zone.is_safe(&self.f, &e, &u, self.f.side_of_sum(&sum, self.n))
    }
}

impl Participant for BroadcastNode {
    fn on_reading(&mut self, epoch: u64, vector: &[i64], out: &mut Vec<Out>) {
        self.v = Some(vector.to_vec());
        self.epoch = epoch;
        if self.trends.is_some() {
            if self.recent.len() == TREND_WINDOW {
                self.recent.pop_front();
            }
            self.recent.push_back((epoch, self.f.reading(vector)));
        }
        let first = self.views[self.id].is_none();
        let due = match self.policy {
            Policy::Always => true,
            Policy::Every(k) => epoch % k == 0,
            Policy::Zone(_) => self.violated(),
        };
        if first || due {
            self.send(out);
        }
    }

    fn on_message(&mut self, from: NodeId, msg: &Msg, out: &mut Vec<Out>) {
        match msg {
            Msg::Update {
                origin,
                seq,
                vector,
                known,
                trend,
            } => {
                for (j, &k) in known.iter().enumerate().take(self.n) {
                    if k > self.heard_of[j].0 {
                        self.heard_of[j] = (k, from);
                    }
                }
                if *origin == self.id || *seq <= self.seqs[*origin] {
                    return;
                }
                self.store(*origin, *seq, vector);
                self.take_trend(*origin, trend);
                if self.violated() {
                    self.send(out);
                }
            }
            Msg::Pull { origins } => {
                for &j in origins {
                    if let Some(msg) = self.update(j, false) {
                        out.push(Out {
                            dest: Dest::To(from),
                            msg,
                        });
                    }
                }
            }
            _ => {}
        }
    }

    fn on_tick(&mut self, _epoch: u64, out: &mut Vec<Out>) {
        if !self.repair {
            return;
        }
        let mut pulls: Vec<(NodeId, Vec<NodeId>)> = Vec::new();
        for j in 0..self.n {
            let (k, holder) = self.heard_of[j];
            if j == self.id || k <= self.seqs[j] {
                continue;
            }
            match pulls.iter_mut().find(|p| p.0 == holder) {
                Some(p) => p.1.push(j),
                None => pulls.push((holder, vec![j])),
            }
        }
        for (holder, origins) in pulls {
            out.push(Out {
                dest: Dest::To(holder),
                msg: Msg::Pull { origins },
            });
        }
    }

    fn belief(&self) -> Option<Side> {
        self.views[self.id]
            .is_some()
            .then(|| self.f.side_of_sum(&self.sum_now(), self.n))
    }

    fn estimate(&self) -> Option<Vec<i128>> {
        (self.heard == self.n).then(|| self.sum_now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trend_fits_a_line_and_predicts_in_whole_quanta_up_to_its_horizon() {
        // 2.5 quanta an epoch, plus a wobble the fit averages out
        let recent: VecDeque<(u64, [i64; 2])> = (0..TREND_WINDOW as u64)
            .map(|k| (100 + k, [(5 * k / 2) as i64 + (k % 2) as i64, -7]))
            .collect();
        let t = Trend::fit(&recent);
        assert_eq!(t.at, 100 + TREND_WINDOW as u64 - 1);
        assert!((t.slope[0] - 2560).abs() < 100, "{t:?}");
        assert_eq!(t.slope[1], 0);
        let t = Trend {
            at: 10,
            slope: [-1536, 512],
        };
        // -1.5 and +0.5 quanta an epoch, floored: the same on every node
        assert_eq!(t.predict([0, 0], 10), [0, 0]);
        assert_eq!(t.predict([0, 0], 11), [-2, 0]);
        assert_eq!(t.predict([0, 0], 13), [-5, 1]);
        assert_eq!(t.predict([0, 0], 5), [0, 0], "no prediction backwards");
        let far = t.predict([0, 0], 10 + TREND_HORIZON);
        assert_eq!(t.predict([0, 0], 10 + 10 * TREND_HORIZON), far);
        // one reading: no slope
        assert_eq!(
            Trend::fit(&recent.iter().take(1).copied().collect()).slope,
            [0, 0]
        );
    }
}
