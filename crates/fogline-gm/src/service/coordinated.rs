//! The coordinator protocol as node components run it (free running only): every participant
//! publishes its messages as [`Envelope`]s on its own `gm/<name>/msg` and reads the others'.
//! The coordinator (index `nodes`) decides and raises the alarms; a node's alarms follow the
//! estimate the coordinator last sent it.

use super::records::{Alarm, Envelope, GmConfig, Reading, Status};
use super::{json, Publish};
use crate::function::{Function, Side};
use crate::proto::coordinator::{Coordinator, CoordinatorNode};
use crate::proto::{Dest, Out, Participant};
use crate::zone::Zone;

/// A participant of the coordinator protocol.
pub struct Coordinated {
    id: usize,
    nodes: usize,
    f: Function,
    part: Box<dyn Participant + Send>,
    side: Option<Side>,
}

impl Coordinated {
    /// Node `cfg.id`, or the coordinator when `cfg.id == cfg.nodes`.
    pub fn new(cfg: &GmConfig, f: Function, zone: Zone) -> Result<Coordinated, String> {
        let part: Box<dyn Participant + Send> = if cfg.id == cfg.nodes {
            Box::new(Coordinator::new(cfg.nodes, f.clone(), zone))
        } else if cfg.id < cfg.nodes {
            Box::new(CoordinatorNode::new(cfg.id, cfg.nodes, f.clone(), zone))
        } else {
            return Err(format!("id {} is above nodes = {}", cfg.id, cfg.nodes));
        };
        Ok(Coordinated {
            id: cfg.id,
            nodes: cfg.nodes,
            f,
            part,
            side: None,
        })
    }

    /// A reading (nodes only).
    pub fn on_reading(&mut self, r: &Reading) -> Vec<Publish> {
        let v = self.f.lift([
            self.f.quantise(0, r.temperature),
            self.f.quantise(1, r.humidity),
        ]);
        let mut out = Vec::new();
        self.part.on_reading(r.epoch, &v, &mut out);
        self.publish(r.epoch, out)
    }

    /// Another participant's message.
    pub fn on_envelope(&mut self, e: &Envelope) -> Vec<Publish> {
        if e.from == self.id || e.to.is_some_and(|to| to != self.id) {
            return Vec::new();
        }
        let mut out = Vec::new();
        self.part.on_message(e.from, &e.msg, &mut out);
        self.publish(e.epoch, out)
    }

    fn publish(&mut self, epoch: u64, out: Vec<Out>) -> Vec<Publish> {
        let mut p = Vec::new();
        let sent = !out.is_empty();
        for o in out {
            let to = match o.dest {
                Dest::All => None,
                Dest::To(t) => Some(t),
            };
            let e = Envelope {
                from: self.id,
                to,
                epoch,
                msg: o.msg,
            };
            p.push(("msg", json(&e)));
        }
        let side = self.part.belief();
        if side != self.side {
            if let (Some(s), Some(sum)) = (side, self.part.estimate()) {
                let alarm = Alarm {
                    node: self.id,
                    epoch,
                    side: s,
                    value: self.f.physical(&sum, self.nodes),
                };
                p.push(("alarm", json(&alarm)));
            }
            self.side = side;
        }
        let status = Status {
            epoch,
            round: 0,
            node: self.id,
            sent,
            side,
            seqs: vec![self.part.version().unwrap_or(0)],
        };
        p.push(("status", json(&status)));
        p
    }
}
