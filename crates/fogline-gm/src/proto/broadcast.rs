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
        }
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
            ..
        } = msg
        else {
            return false;
        };
        if *origin >= self.n || *origin == self.id || *seq <= self.seqs[*origin] {
            return false;
        }
        self.store(*origin, *seq, vector);
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

    /// The sum of the vectors this node holds, once it has sent its own.
    pub fn view_sum(&self) -> Option<Vec<i128>> {
        self.views[self.id].is_some().then(|| self.sum.clone())
    }

    /// Whether the local zone is violated.
    fn violated(&self) -> bool {
        let Policy::Zone(zone) = self.policy else {
            return false;
        };
        let (Some(v), Some(reference)) = (&self.v, &self.views[self.id]) else {
            return false;
        };
        let e = function::mean(&self.sum, self.n);
        let u = drift(&e, v, reference, None);
        !zone.is_safe(&self.f, &e, &u, self.f.side_of_sum(&self.sum, self.n))
    }
}

impl Participant for BroadcastNode {
    fn on_reading(&mut self, epoch: u64, vector: &[i64], out: &mut Vec<Out>) {
        self.v = Some(vector.to_vec());
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
            .then(|| self.f.side_of_sum(&self.sum, self.n))
    }

    fn estimate(&self) -> Option<Vec<i128>> {
        (self.heard == self.n).then(|| self.sum.clone())
    }
}
