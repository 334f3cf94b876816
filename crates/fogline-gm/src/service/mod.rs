//! The monitor as a node component runs it: its configuration (`[gm]`), and the state machine
//! between the records it reads (readings, ticks, other nodes' updates) and the records it
//! publishes (its updates, status, alarms), all JSON. The I/O is the node's; this is pure.
//!
//! Two ways to run: free (a reading or an update is acted on when it arrives: the protocol as
//! the simulator runs it), or lock step (a tick says which round of which epoch to run and
//! whose updates of the previous round to wait for; the outcome is then the one of
//! [`crate::sim::rounds`], message for message).

use serde::Serialize;

mod coordinated;
mod records;
#[cfg(test)]
mod tests;

pub use coordinated::Coordinated;
pub use records::{Alarm, Envelope, GmConfig, Pull, Reading, Status, Tick, Update};

use crate::function::{Function, Kind, Side};
use crate::proto::broadcast::{BroadcastNode, Policy};
use crate::proto::{Msg, Out, Participant};
use crate::zone::Zone;

/// The documented default `[gm]` section.
pub const DEFAULT_SECTION: &str = include_str!("../gm.toml");

/// What to publish on this node: (`update` | `pull` | `msg` | `status` | `alarm`, JSON
/// payload).
pub type Publish = (&'static str, Vec<u8>);

/// A monitor of either protocol.
pub enum Service {
    /// the thesis' broadcast protocol (free or lock step, with or without repair)
    Broadcast(Box<Monitor>),
    /// the coordinator protocol (free running)
    Coordinated(Box<Coordinated>),
}

impl Service {
    /// The monitor `cfg` describes.
    ///
    /// # Errors
    /// As [`Monitor::new`]; lock step with the coordinator protocol.
    pub fn new(cfg: &GmConfig) -> Result<Service, String> {
        match cfg.protocol.as_str() {
            "broadcast" => Monitor::new(cfg).map(|m| Service::Broadcast(Box::new(m))),
            "coordinator" => {
                if cfg.lockstep {
                    return Err("lock step runs the broadcast protocol only".into());
                }
                let (f, zone) = function_and_zone(cfg)?;
                Coordinated::new(cfg, f, zone).map(|c| Service::Coordinated(Box::new(c)))
            }
            other => Err(format!(
                "unknown protocol {other:?}: broadcast or coordinator"
            )),
        }
    }

    /// A reading record.
    ///
    /// # Errors
    /// A payload that is not a reading.
    pub fn on_reading(&mut self, payload: &[u8]) -> Result<Vec<Publish>, String> {
        match self {
            Service::Broadcast(m) => m.on_reading(payload),
            Service::Coordinated(c) => {
                let r: Reading =
                    serde_json::from_slice(payload).map_err(|e| format!("reading: {e}"))?;
                Ok(c.on_reading(&r))
            }
        }
    }

    /// A tick record (lock step; broadcast only).
    ///
    /// # Errors
    /// A payload that is not a tick.
    pub fn on_tick(&mut self, payload: &[u8]) -> Result<Vec<Publish>, String> {
        match self {
            Service::Broadcast(m) => m.on_tick(payload),
            Service::Coordinated(_) => Ok(Vec::new()),
        }
    }

    /// A record from a peer: `update`, `pull` or `msg`.
    ///
    /// # Errors
    /// A payload that is not what its kind says.
    pub fn on_peer(&mut self, kind: &str, payload: &[u8]) -> Result<Vec<Publish>, String> {
        match (self, kind) {
            (Service::Broadcast(m), "update") => m.on_update(payload),
            (Service::Broadcast(m), "pull") => m.on_pull(payload),
            (Service::Coordinated(c), "msg") => {
                let e: Envelope =
                    serde_json::from_slice(payload).map_err(|e| format!("msg: {e}"))?;
                Ok(c.on_envelope(&e))
            }
            _ => Ok(Vec::new()),
        }
    }
}

fn function_and_zone(cfg: &GmConfig) -> Result<(Function, Zone), String> {
    let kind = Kind::parse(&cfg.function).ok_or(format!("unknown function {:?}", cfg.function))?;
    let zone = Zone::parse(&cfg.zone).ok_or_else(|| {
        let names: Vec<&str> = Zone::ALL.iter().map(|z| z.name()).collect();
        format!("unknown zone {:?}: {}", cfg.zone, names.join(", "))
    })?;
    let t = cfg.threshold.unwrap_or(kind.thesis_threshold());
    Ok((Function::new(kind, t, [cfg.centre, 35.0], 0.01)?, zone))
}

/// One node's monitor.
pub struct Monitor {
    cfg: GmConfig,
    f: Function,
    node: BroadcastNode,
    reading: Option<(u64, Vec<i64>)>,
    ticks: std::collections::VecDeque<Tick>,
    pending: Vec<Update>,
    side: Option<Side>,
    rng: crate::rng::Rng,
}

impl Monitor {
    /// A monitor for `cfg`.
    ///
    /// # Errors
    /// An unknown function or zone, a threshold that is not whole quanta, a bad index.
    pub fn new(cfg: &GmConfig) -> Result<Monitor, String> {
        if cfg.id >= cfg.nodes {
            return Err(format!("id {} is not below nodes = {}", cfg.id, cfg.nodes));
        }
        let (f, zone) = function_and_zone(cfg)?;
        let mut node = BroadcastNode::new(cfg.id, cfg.nodes, f.clone(), Policy::Zone(zone));
        if cfg.repair {
            node = node.with_repair();
        }
        if cfg.predict {
            node = node.with_prediction();
        }
        Ok(Monitor {
            node,
            rng: crate::rng::Rng::new(cfg.id as u64),
            cfg: cfg.clone(),
            f,
            reading: None,
            ticks: Default::default(),
            pending: Vec::new(),
            side: None,
        })
    }

    /// A reading record arrived.
    ///
    /// # Errors
    /// A payload that is not a reading.
    pub fn on_reading(&mut self, payload: &[u8]) -> Result<Vec<Publish>, String> {
        let r: Reading = serde_json::from_slice(payload).map_err(|e| format!("reading: {e}"))?;
        let v = self.f.lift([
            self.f.quantise(0, r.temperature),
            self.f.quantise(1, r.humidity),
        ]);
        if !self.cfg.lockstep {
            let mut out = Vec::new();
            // an epoch boundary: pull what is still missing (repair), then the reading
            self.node.on_tick(r.epoch, &mut out);
            self.node.on_reading(r.epoch, &v, &mut out);
            return Ok(self.publish(r.epoch, 0, out));
        }
        self.reading = Some((r.epoch, v));
        Ok(self.advance())
    }

    /// A tick record arrived (lock step).
    ///
    /// # Errors
    /// A payload that is not a tick.
    pub fn on_tick(&mut self, payload: &[u8]) -> Result<Vec<Publish>, String> {
        let t: Tick = serde_json::from_slice(payload).map_err(|e| format!("tick: {e}"))?;
        self.ticks.push_back(t);
        Ok(self.advance())
    }

    /// Another node's update arrived.
    ///
    /// # Errors
    /// A payload that is not an update.
    pub fn on_update(&mut self, payload: &[u8]) -> Result<Vec<Publish>, String> {
        let u: Update = serde_json::from_slice(payload).map_err(|e| format!("update: {e}"))?;
        if u.origin == self.cfg.id || u.origin >= self.cfg.nodes {
            return Ok(Vec::new());
        }
        if !self.cfg.lockstep {
            let lossy = self.cfg.inject_loss_until.is_none_or(|e| u.epoch < e);
            if lossy && self.cfg.inject_loss > 0.0 && self.rng.chance(self.cfg.inject_loss) {
                return Ok(Vec::new());
            }
            let mut out = Vec::new();
            self.node.on_message(u.origin, &msg(&u), &mut out);
            return Ok(self.publish(u.epoch, 0, out));
        }
        self.pending.push(u);
        Ok(self.advance())
    }

    /// Another node's pull record arrived (repair).
    ///
    /// # Errors
    /// A payload that is not a pull.
    pub fn on_pull(&mut self, payload: &[u8]) -> Result<Vec<Publish>, String> {
        let p: Pull = serde_json::from_slice(payload).map_err(|e| format!("pull: {e}"))?;
        if p.to != self.cfg.id || p.from >= self.cfg.nodes {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let origins = p
            .origins
            .into_iter()
            .filter(|&o| o < self.cfg.nodes)
            .collect();
        self.node
            .on_message(p.from, &Msg::Pull { origins }, &mut out);
        Ok(self.publish(p.epoch, 0, out))
    }

    /// Runs every tick whose inputs are all here.
    fn advance(&mut self) -> Vec<Publish> {
        let mut all = Vec::new();
        while let Some(t) = self.ticks.front() {
            let (epoch, round) = (t.epoch, t.round);
            let mut out = Vec::new();
            if round == 0 {
                match &self.reading {
                    Some((e, v)) if *e == epoch => {
                        let v = v.clone();
                        self.node.on_reading(epoch, &v, &mut out);
                    }
                    _ => break,
                }
            } else {
                let want = &t.senders;
                let have = |s: &usize| {
                    *s == self.cfg.id
                        || self
                            .pending
                            .iter()
                            .any(|u| u.origin == *s && u.epoch == epoch && u.round + 1 == round)
                };
                if !want.iter().all(have) {
                    break;
                }
                let (now, later): (Vec<Update>, Vec<Update>) = self
                    .pending
                    .drain(..)
                    .partition(|u| u.epoch == epoch && u.round + 1 == round);
                self.pending = later;
                for u in &now {
                    self.node.absorb(&msg(u));
                }
                self.node.check(&mut out);
            }
            self.ticks.pop_front();
            all.extend(self.publish(epoch, round, out));
        }
        all
    }

    fn publish(&mut self, epoch: u64, round: u32, out: Vec<Out>) -> Vec<Publish> {
        let mut p = Vec::new();
        let mut sent = false;
        for o in out {
            match (o.msg, o.dest) {
                (
                    Msg::Update {
                        origin,
                        seq,
                        vector,
                        known,
                        trend,
                    },
                    _,
                ) => {
                    // a repaired update is another origin's, sent on its behalf
                    sent |= origin == self.cfg.id;
                    let u = Update {
                        epoch,
                        round,
                        origin,
                        seq,
                        vector,
                        known,
                        trend,
                    };
                    p.push(("update", json(&u)));
                }
                (Msg::Pull { origins }, crate::proto::Dest::To(to)) => {
                    let from = self.cfg.id;
                    let pull = Pull {
                        epoch,
                        from,
                        to,
                        origins,
                    };
                    p.push(("pull", json(&pull)));
                }
                _ => {}
            }
        }
        let side = self.node.belief();
        if side != self.side {
            if let (Some(s), Some(sum)) = (side, self.node.view_sum()) {
                let value = self.f.physical(&sum, self.cfg.nodes);
                p.push((
                    "alarm",
                    json(&Alarm {
                        node: self.cfg.id,
                        epoch,
                        side: s,
                        value,
                    }),
                ));
            }
            self.side = side;
        }
        let status = Status {
            epoch,
            round,
            node: self.cfg.id,
            sent,
            side,
            seqs: self.node.seqs().to_vec(),
        };
        p.push(("status", json(&status)));
        p
    }
}

fn msg(u: &Update) -> Msg {
    Msg::Update {
        origin: u.origin,
        seq: u.seq,
        vector: u.vector.clone(),
        known: u.known.clone(),
        trend: u.trend,
    }
}

pub(crate) fn json<T: Serialize>(x: &T) -> Vec<u8> {
    serde_json::to_vec(x).expect("plain data serialises")
}
