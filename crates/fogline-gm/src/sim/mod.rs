//! The simulator: N nodes (and a coordinator, if the protocol has one) exchange messages over a
//! network model in simulated time; readings arrive every `period_ms`. Deterministic for a seed.
//!
//! Order of events at one instant: the readings of an epoch are all taken (in node order) before
//! any message that arrives at the same time; ties between messages go in sending order.

mod metrics;
pub mod net;
pub mod rounds;

use std::collections::{BTreeMap, HashSet};

pub use metrics::Report;
pub use net::{Graph, Latency, Net};

use crate::function::{Function, Side};
use crate::proto::{Dest, Msg, NodeId, Out, Participant, Protocol};
use crate::rng::Rng;

/// One simulation run.
#[derive(Debug, Clone)]
pub struct Config {
    /// the protocol and its zone
    pub protocol: Protocol,
    /// the network model
    pub net: Net,
    /// the epoch (31 s in the Intel Lab data)
    pub period_ms: u64,
    /// seeds the losses and latencies
    pub seed: u64,
}

enum Event {
    Reading(usize),
    Tick(usize),
    Deliver {
        to: NodeId,
        from: NodeId,
        msg: Msg,
        /// flooded broadcasts carry a packet id, so that each node relays a packet once
        packet: Option<u64>,
    },
}

/// What the engine observed, for [`metrics`].
pub(crate) struct Trace {
    pub sent: u64,
    pub delivered: u64,
    pub lost: u64,
    pub beliefs: Vec<Vec<(u64, Side)>>,
    pub wrong_epochs: usize,
    pub mismatch_epochs: usize,
    pub sync_total_ms: u64,
    pub sync_intervals: u64,
}

struct Engine<'a> {
    cfg: &'a Config,
    parts: Vec<Box<dyn Participant>>,
    n: usize,
    queue: BTreeMap<(u64, u64), Event>,
    next_seq: u64,
    next_packet: u64,
    rng: Rng,
    seen: Vec<HashSet<u64>>,
    latest: Vec<u64>,
    known: Vec<Vec<u64>>,
    since: Vec<Vec<Option<u64>>>,
    trace: Trace,
}

/// Runs `cfg.protocol` over `vectors[epoch][node]` and measures it against the exact oracle.
pub fn run(f: &Function, vectors: &[Vec<Vec<i64>>], cfg: &Config) -> Report {
    let n = vectors.first().map_or(0, |e| e.len());
    let parts = cfg.protocol.participants(f, n);
    let total = parts.len();
    let mut eng = Engine {
        cfg,
        parts,
        n,
        queue: BTreeMap::new(),
        next_seq: 0,
        next_packet: 0,
        rng: Rng::new(cfg.seed),
        seen: vec![HashSet::new(); total],
        latest: vec![0; total],
        known: vec![vec![0; total]; total],
        since: vec![vec![None; total]; total],
        trace: Trace {
            sent: 0,
            delivered: 0,
            lost: 0,
            beliefs: vec![Vec::new(); total],
            wrong_epochs: 0,
            mismatch_epochs: 0,
            sync_total_ms: 0,
            sync_intervals: 0,
        },
    };
    let sides = crate::oracle::sides(f, vectors);
    for k in 0..vectors.len() {
        let t = k as u64 * cfg.period_ms;
        eng.push(t, Event::Reading(k));
        eng.push(t + cfg.period_ms - 1, Event::Tick(k));
    }
    while let Some(((t, _), ev)) = eng.queue.pop_first() {
        match ev {
            Event::Reading(k) => {
                for (id, vector) in vectors[k].iter().enumerate() {
                    let mut outs = Vec::new();
                    eng.parts[id].on_reading(k as u64, vector, &mut outs);
                    eng.observe(id, t);
                    eng.dispatch(id, outs, t);
                }
            }
            Event::Tick(k) => {
                eng.check_epoch(sides[k]);
                for id in 0..total {
                    let mut outs = Vec::new();
                    eng.parts[id].on_tick(k as u64, &mut outs);
                    eng.dispatch(id, outs, t);
                }
            }
            Event::Deliver {
                to,
                from,
                msg,
                packet,
            } => eng.deliver(to, from, msg, packet, t),
        }
    }
    let end = vectors.len() as u64 * cfg.period_ms;
    for r in 0..total {
        for o in 0..total {
            if let Some(s) = eng.since[r][o].take() {
                eng.trace.sync_total_ms += end.saturating_sub(s);
                eng.trace.sync_intervals += 1;
            }
        }
    }
    let deciders: Vec<NodeId> = if cfg.protocol.has_coordinator() {
        vec![n]
    } else {
        (0..n).collect()
    };
    metrics::report(cfg, n, &sides, &deciders, eng.trace)
}

impl Engine<'_> {
    fn push(&mut self, t: u64, ev: Event) {
        self.queue.insert((t, self.next_seq), ev);
        self.next_seq += 1;
    }

    fn deciders(&self) -> Vec<NodeId> {
        if self.cfg.protocol.has_coordinator() {
            vec![self.n]
        } else {
            (0..self.n).collect()
        }
    }

    /// End of an epoch: is every decider right, and does everybody hold the same estimate?
    fn check_epoch(&mut self, truth: Side) {
        for d in self.deciders() {
            if self.parts[d].belief() != Some(truth) {
                self.trace.wrong_epochs += 1;
            }
        }
        let first = self.parts[0].estimate();
        if first.is_none() || self.parts.iter().any(|p| p.estimate() != first) {
            self.trace.mismatch_epochs += 1;
        }
    }

    /// Logs a change of `id`'s belief, and its version against the coordinator's.
    fn observe(&mut self, id: NodeId, t: u64) {
        if let Some(b) = self.parts[id].belief() {
            let log = &mut self.trace.beliefs[id];
            // Only the last belief of an instant counts: a cascade of updates that all
            // arrive at once is one change of view, not several.
            if log.last().is_some_and(|x| x.0 == t) {
                log.pop();
            }
            if log.last().map(|x| x.1) != Some(b) {
                log.push((t, b));
            }
        }
        if !self.cfg.protocol.has_coordinator() {
            return;
        }
        let c = self.n;
        let top = self.parts[c].version().unwrap_or(0);
        if id == c {
            for r in 0..self.n {
                if self.parts[r].version().unwrap_or(0) < top && self.since[r][c].is_none() {
                    self.since[r][c] = Some(t);
                }
            }
        } else if self.parts[id].version().unwrap_or(0) >= top {
            self.close(id, c, t);
        }
    }

    fn close(&mut self, r: NodeId, origin: NodeId, t: u64) {
        if let Some(s) = self.since[r][origin].take() {
            self.trace.sync_total_ms += t - s;
            self.trace.sync_intervals += 1;
        }
    }

    fn dispatch(&mut self, from: NodeId, outs: Vec<Out>, t: u64) {
        for out in outs {
            if let Some((origin, seq)) = out.msg.sync_key() {
                self.latest[origin] = self.latest[origin].max(seq);
                for r in 0..self.n {
                    if r != origin && self.known[r][origin] < seq && self.since[r][origin].is_none()
                    {
                        self.since[r][origin] = Some(t);
                    }
                }
            }
            match (&self.cfg.net, out.dest) {
                (Net::Flood { .. }, Dest::All) => {
                    let p = self.next_packet;
                    self.next_packet += 1;
                    self.seen[from].insert(p);
                    if from >= self.n {
                        // The coordinator hands its broadcast to node 0's radio.
                        self.schedule(t, 0, from, out.msg.clone(), Some(p));
                    } else {
                        self.transmit(from, from, &out.msg, Some(p), t);
                    }
                }
                (
                    Net::Flood {
                        graph,
                        loss,
                        latency,
                    },
                    Dest::To(to),
                ) => {
                    // The coordinator (participant n) sits at node 0.
                    let at = |p: NodeId| if p >= self.n { 0 } else { p };
                    let path = graph.path(at(from), at(to));
                    let (loss, latency) = (*loss, *latency);
                    let mut when = t;
                    let mut arrived = true;
                    for _ in 1..path.len() {
                        self.trace.sent += 1;
                        if self.rng.chance(loss) {
                            self.trace.lost += 1;
                            arrived = false;
                            break;
                        }
                        when += latency.sample(&mut self.rng);
                    }
                    if path.len() == 1 {
                        self.trace.sent += 1;
                    }
                    if arrived {
                        self.schedule(when, to, from, out.msg.clone(), None);
                    }
                }
                (_, dest) => {
                    self.trace.sent += 1;
                    let targets: Vec<NodeId> = match dest {
                        Dest::All => (0..self.parts.len()).filter(|&r| r != from).collect(),
                        Dest::To(to) => vec![to],
                    };
                    for to in targets {
                        let (lost, lat) = match &self.cfg.net {
                            Net::Lossless { latency_ms } => (false, *latency_ms),
                            Net::Lossy { loss, latency } => {
                                let (loss, latency) = (*loss, *latency);
                                (self.rng.chance(loss), latency.sample(&mut self.rng))
                            }
                            Net::Flood { .. } => unreachable!("handled above"),
                        };
                        if lost {
                            self.trace.lost += 1;
                        } else {
                            self.schedule(t + lat, to, from, out.msg.clone(), None);
                        }
                    }
                }
            }
        }
    }

    /// One radio transmission of a flooded packet by `by`, heard by its neighbours.
    fn transmit(&mut self, by: NodeId, from: NodeId, msg: &Msg, packet: Option<u64>, t: u64) {
        let Net::Flood {
            graph,
            loss,
            latency,
        } = &self.cfg.net
        else {
            return;
        };
        let (loss, latency) = (*loss, *latency);
        let neighbours = graph.adj[by].clone();
        self.trace.sent += 1;
        for j in neighbours {
            if self.rng.chance(loss) {
                self.trace.lost += 1;
            } else {
                let when = t + latency.sample(&mut self.rng);
                self.schedule(when, j, from, msg.clone(), packet);
            }
        }
    }

    fn schedule(&mut self, t: u64, to: NodeId, from: NodeId, msg: Msg, packet: Option<u64>) {
        self.push(
            t,
            Event::Deliver {
                to,
                from,
                msg,
                packet,
            },
        );
    }

    fn deliver(&mut self, to: NodeId, from: NodeId, msg: Msg, packet: Option<u64>, t: u64) {
        if let Some(p) = packet {
            if !self.seen[to].insert(p) {
                return;
            }
            self.transmit(to, from, &msg, packet, t);
        }
        self.trace.delivered += 1;
        if let Some((origin, seq)) = msg.sync_key() {
            if seq > self.known[to][origin] {
                self.known[to][origin] = seq;
                if seq >= self.latest[origin] {
                    self.close(to, origin, t);
                }
            }
        }
        let mut outs = Vec::new();
        self.parts[to].on_message(from, &msg, &mut outs);
        self.observe(to, t);
        self.dispatch(to, outs, t);
    }
}
