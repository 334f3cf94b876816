//! A coordinator with lazy synchronisation, in the style of AutoMon (Sivan, Gabel, Schuster,
//! SIGMOD 2022, after Sharfman et al.'s balancing).
//!
//! The coordinator holds the estimate `e = (1/N) sum v'_j` and decides which side of `T`
//! `f(v)` is on. Each node checks `u_i = e + (v_i - v'_i) + s_i` against its zone, where the
//! slacks `s_i` sum to zero, so the mean of the `u_i` is still `v`. A violating node sends its
//! vector. The coordinator grows a balancing set `B` (the violators, then as many nodes again,
//! doubling) until the mean drift of `B` is safe, and then gives every node of `B` that mean
//! as its drift through new slack (a lazy sync: `e` stays). Once `B` would pass half the nodes
//! it asks everyone and resynchronises: `e = v`, slacks zero, a new version.
//!
//! Messages to several nodes (request, balance, sync) are one broadcast each, as on a radio or
//! a broker topic; violations and replies are unicasts to the coordinator.
//!
//! Losses: a node with no estimate yet re-sends its vector at every reading; unanswered
//! requests are re-sent at the end of each epoch; a node that reports against an old version
//! is sent the current state (estimate, its reference vector and its slack).

use super::{balance_slack, drift, Dest, Msg, NodeId, Out, Participant};
use crate::function::{self, Function, Side};
use crate::zone::Zone;

/// The coordinator (participant `n`).
#[derive(Debug, Clone)]
pub struct Coordinator {
    n: usize,
    f: Function,
    zone: Zone,
    /// 0 until the first full sync
    version: u64,
    refs: Vec<Vec<i64>>,
    sum: Vec<i128>,
    slack: Vec<Vec<f64>>,
    /// vectors received during the current resolution
    reports: Vec<Option<Vec<i64>>>,
    requested: Vec<bool>,
    cursor: usize,
}

impl Coordinator {
    /// The coordinator of `n` nodes.
    pub fn new(n: usize, f: Function, zone: Zone) -> Coordinator {
        let d = f.dim();
        Coordinator {
            n,
            f,
            zone,
            version: 0,
            refs: vec![vec![0; d]; n],
            sum: vec![0; d],
            slack: vec![vec![0.0; d]; n],
            reports: vec![None; n],
            requested: vec![false; n],
            cursor: 0,
        }
    }

    fn request(&mut self, nodes: Vec<NodeId>, out: &mut Vec<Out>) {
        for &j in &nodes {
            self.requested[j] = true;
        }
        out.push(Out {
            dest: Dest::All,
            msg: Msg::Request {
                version: self.version,
                nodes,
            },
        });
    }

    fn full_sync(&mut self, out: &mut Vec<Out>) {
        let d = self.f.dim();
        self.sum = vec![0; d];
        for j in 0..self.n {
            let v = self.reports[j]
                .take()
                .expect("a full sync has every vector");
            for (s, x) in self.sum.iter_mut().zip(&v) {
                *s += *x as i128;
            }
            self.refs[j] = v;
            self.slack[j] = vec![0.0; d];
        }
        self.version += 1;
        out.push(Out {
            dest: Dest::All,
            msg: Msg::Sync {
                version: self.version,
                sum: self.sum.clone(),
            },
        });
    }

    fn resolve(&mut self, out: &mut Vec<Out>) {
        if self.requested.iter().any(|&r| r) {
            return;
        }
        let set: Vec<NodeId> = (0..self.n).filter(|&j| self.reports[j].is_some()).collect();
        if set.is_empty() || (self.version == 0 && set.len() < self.n) {
            return;
        }
        if set.len() == self.n {
            return self.full_sync(out);
        }
        let e = function::mean(&self.sum, self.n);
        let d = self.f.dim();
        let mut mean = vec![0.0; d];
        for &j in &set {
            let v = self.reports[j].as_ref().expect("in the set");
            let u = drift(&e, v, &self.refs[j], Some(&self.slack[j]));
            for k in 0..d {
                mean[k] += u[k] / set.len() as f64;
            }
        }
        let side = self.f.side_of_sum(&self.sum, self.n);
        if set.len() > 1 && self.zone.is_safe(&self.f, &e, &mean, side) {
            for &j in &set {
                let v = self.reports[j].take().expect("in the set");
                self.slack[j] = balance_slack(&mean, &e, &v, &self.refs[j]);
            }
            out.push(Out {
                dest: Dest::All,
                msg: Msg::Balance {
                    version: self.version,
                    nodes: set,
                    mean,
                },
            });
            return;
        }
        // Grow the set: double it, or ask everyone once it would pass half the nodes.
        let want = if 2 * set.len() >= self.n {
            self.n - set.len()
        } else {
            set.len()
        };
        let mut ask = Vec::with_capacity(want);
        while ask.len() < want {
            let j = self.cursor % self.n;
            self.cursor += 1;
            if self.reports[j].is_none() {
                ask.push(j);
            }
        }
        self.request(ask, out);
    }
}

impl Participant for Coordinator {
    fn on_reading(&mut self, _epoch: u64, _vector: &[i64], _out: &mut Vec<Out>) {}

    fn on_message(&mut self, _from: NodeId, msg: &Msg, out: &mut Vec<Out>) {
        let (node, version, vector) = match msg {
            Msg::Violation {
                node,
                version,
                vector,
            }
            | Msg::Reply {
                node,
                version,
                vector,
            } => (*node, *version, vector),
            _ => return,
        };
        if self.version > 0 && version < self.version {
            out.push(Out {
                dest: Dest::To(node),
                msg: Msg::CatchUp {
                    version: self.version,
                    sum: self.sum.clone(),
                    reference: self.refs[node].clone(),
                    slack: self.slack[node].clone(),
                },
            });
        }
        self.reports[node] = Some(vector.clone());
        self.requested[node] = false;
        self.resolve(out);
    }

    fn on_tick(&mut self, _epoch: u64, out: &mut Vec<Out>) {
        let pending: Vec<NodeId> = (0..self.n).filter(|&j| self.requested[j]).collect();
        if !pending.is_empty() {
            self.request(pending, out);
        }
    }

    fn belief(&self) -> Option<Side> {
        (self.version > 0).then(|| self.f.side_of_sum(&self.sum, self.n))
    }

    fn estimate(&self) -> Option<Vec<i128>> {
        (self.version > 0).then(|| self.sum.clone())
    }

    fn version(&self) -> Option<u64> {
        Some(self.version)
    }
}

/// A node of the coordinator protocol.
#[derive(Debug, Clone)]
pub struct CoordinatorNode {
    id: NodeId,
    n: usize,
    f: Function,
    zone: Zone,
    version: u64,
    sum: Vec<i128>,
    reference: Vec<i64>,
    slack: Vec<f64>,
    v: Option<Vec<i64>>,
    /// the vector this node last sent the coordinator
    reported: Option<Vec<i64>>,
}

impl CoordinatorNode {
    /// Node `id` of `n`; the coordinator is participant `n`.
    pub fn new(id: NodeId, n: usize, f: Function, zone: Zone) -> CoordinatorNode {
        let d = f.dim();
        CoordinatorNode {
            id,
            n,
            f,
            zone,
            version: 0,
            sum: vec![0; d],
            reference: vec![0; d],
            slack: vec![0.0; d],
            v: None,
            reported: None,
        }
    }

    fn violated(&self) -> bool {
        let Some(v) = &self.v else { return false };
        if self.version == 0 {
            return true;
        }
        let e = function::mean(&self.sum, self.n);
        let u = drift(&e, v, &self.reference, Some(&self.slack));
        !self
            .zone
            .is_safe(&self.f, &e, &u, self.f.side_of_sum(&self.sum, self.n))
    }

    fn send(&mut self, reply: bool, out: &mut Vec<Out>) {
        let vector = self.v.clone().unwrap_or_else(|| self.reference.clone());
        self.reported = Some(vector.clone());
        let (node, version) = (self.id, self.version);
        let msg = if reply {
            Msg::Reply {
                node,
                version,
                vector,
            }
        } else {
            Msg::Violation {
                node,
                version,
                vector,
            }
        };
        out.push(Out {
            dest: Dest::To(self.n),
            msg,
        });
    }
}

impl Participant for CoordinatorNode {
    fn on_reading(&mut self, _epoch: u64, vector: &[i64], out: &mut Vec<Out>) {
        self.v = Some(vector.to_vec());
        if self.violated() {
            self.send(false, out);
        }
    }

    fn on_message(&mut self, _from: NodeId, msg: &Msg, out: &mut Vec<Out>) {
        match msg {
            Msg::Request { nodes, .. } if nodes.contains(&self.id) => self.send(true, out),
            // No re-check after a balance: the coordinator made the new drift safe for the
            // vector we reported; the next reading checks again.
            Msg::Balance {
                version,
                nodes,
                mean,
            } if *version == self.version && nodes.contains(&self.id) => {
                if let Some(v) = &self.reported {
                    let e = function::mean(&self.sum, self.n);
                    self.slack = balance_slack(mean, &e, v, &self.reference);
                }
            }
            Msg::Sync { version, sum } if *version > self.version => {
                self.version = *version;
                self.sum = sum.clone();
                if let Some(v) = &self.reported {
                    self.reference = v.clone();
                }
                self.slack = vec![0.0; self.f.dim()];
                if self.violated() {
                    self.send(false, out);
                }
            }
            Msg::CatchUp {
                version,
                sum,
                reference,
                slack,
            } if *version > self.version => {
                self.version = *version;
                self.sum = sum.clone();
                self.reference = reference.clone();
                self.slack = slack.clone();
                if self.violated() {
                    self.send(false, out);
                }
            }
            _ => {}
        }
    }

    fn belief(&self) -> Option<Side> {
        (self.version > 0).then(|| self.f.side_of_sum(&self.sum, self.n))
    }

    fn estimate(&self) -> Option<Vec<i128>> {
        (self.version > 0).then(|| self.sum.clone())
    }

    fn version(&self) -> Option<u64> {
        Some(self.version)
    }
}
