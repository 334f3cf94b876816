//! The monitor as a node component runs it: its configuration (`[gm]`), and the state machine
//! between the records it reads (readings, ticks, other nodes' updates) and the records it
//! publishes (its updates, status, alarms), all JSON. The I/O is the node's; this is pure.
//!
//! Two ways to run: free (a reading or an update is acted on when it arrives: the protocol as
//! the simulator runs it), or lock step (a tick says which round of which epoch to run and
//! whose updates of the previous round to wait for; the outcome is then the one of
//! [`crate::sim::rounds`], message for message).

use serde::{Deserialize, Serialize};

use crate::function::{Function, Kind, Side};
use crate::proto::broadcast::{BroadcastNode, Policy};
use crate::proto::{Msg, Out, Participant};
use crate::zone::Zone;

/// The documented default `[gm]` section.
pub const DEFAULT_SECTION: &str = include_str!("gm.toml");

/// The `[gm]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GmConfig {
    /// the monitor's name (topics `gm/<name>/...`); empty: no monitor
    pub name: String,
    /// this node's index
    pub id: usize,
    /// how many nodes monitor together
    pub nodes: usize,
    /// average, variance or covariance
    pub function: String,
    /// the threshold (default: the thesis')
    pub threshold: Option<f64>,
    /// the temperature readings are centred at
    pub centre: f64,
    /// ball, box or convex
    pub zone: String,
    /// every node's native address, in index order
    pub peers: Vec<String>,
    /// act on ticks only
    pub lockstep: bool,
    /// updates carry the sender's version vector, and a node behind pulls what it missed
    pub repair: bool,
    /// drop this fraction of incoming updates (fault injection for experiments and tests)
    pub inject_loss: f64,
    /// only those sent in epochs below this one (default: all)
    pub inject_loss_until: Option<u64>,
}

impl Default for GmConfig {
    fn default() -> GmConfig {
        GmConfig {
            name: String::new(),
            id: 0,
            nodes: 0,
            function: "variance".into(),
            threshold: None,
            centre: 20.0,
            zone: "convex".into(),
            peers: Vec::new(),
            lockstep: false,
            repair: false,
            inject_loss: 0.0,
            inject_loss_until: None,
        }
    }
}

/// A reading record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reading {
    /// epoch number
    pub epoch: u64,
    /// C
    pub temperature: f64,
    /// %RH
    #[serde(default)]
    pub humidity: f64,
}

/// A tick record (lock step).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tick {
    /// epoch
    pub epoch: u64,
    /// round: 0 takes the reading, `r > 0` the updates of round `r - 1`
    pub round: u32,
    /// who sent an update in round `r - 1`
    #[serde(default)]
    pub senders: Vec<usize>,
}

/// An update record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Update {
    /// epoch it was sent in
    pub epoch: u64,
    /// round it was sent in (0 in free mode)
    pub round: u32,
    /// the sender
    pub origin: usize,
    /// its sequence number
    pub seq: u64,
    /// its local vector
    pub vector: Vec<i64>,
    /// with repair: the sender's sequence number for every origin
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub known: Vec<u64>,
}

/// A pull record (repair): `from` asks `to` for the latest updates of `origins`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pull {
    /// the asker's epoch (the answers carry it)
    pub epoch: u64,
    /// who asks
    pub from: usize,
    /// who is asked
    pub to: usize,
    /// whose updates
    pub origins: Vec<usize>,
}

/// A status record, after each step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// epoch
    pub epoch: u64,
    /// round
    pub round: u32,
    /// this node
    pub node: usize,
    /// whether it sent an update in this step
    pub sent: bool,
    /// its decision
    pub side: Option<Side>,
    /// the sequence number it holds for every origin
    pub seqs: Vec<u64>,
}

/// An alarm record: the decision changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alarm {
    /// the node that raised it
    pub node: usize,
    /// epoch
    pub epoch: u64,
    /// the new side
    pub side: Side,
    /// `f(e)` in physical units
    pub value: f64,
}

/// What to publish on this node: (`update` | `pull` | `status` | `alarm`, JSON payload).
pub type Publish = (&'static str, Vec<u8>);

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
        let kind =
            Kind::parse(&cfg.function).ok_or(format!("unknown function {:?}", cfg.function))?;
        let zone = Zone::parse(&cfg.zone).ok_or(format!("unknown zone {:?}", cfg.zone))?;
        if cfg.id >= cfg.nodes {
            return Err(format!("id {} is not below nodes = {}", cfg.id, cfg.nodes));
        }
        let t = cfg.threshold.unwrap_or(kind.thesis_threshold());
        let f = Function::new(kind, t, [cfg.centre, 35.0], 0.01)?;
        let mut node = BroadcastNode::new(cfg.id, cfg.nodes, f.clone(), Policy::Zone(zone));
        if cfg.repair {
            node = node.with_repair();
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
    }
}

fn json<T: Serialize>(x: &T) -> Vec<u8> {
    serde_json::to_vec(x).expect("plain data serialises")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(id: usize, lockstep: bool) -> GmConfig {
        GmConfig {
            name: "lab".into(),
            id,
            nodes: 2,
            zone: "ball".into(),
            lockstep,
            ..GmConfig::default()
        }
    }

    fn reading(epoch: u64, t: f64) -> Vec<u8> {
        json(&Reading {
            epoch,
            temperature: t,
            humidity: 35.0,
        })
    }

    fn of(out: &[Publish], kind: &str) -> Vec<serde_json::Value> {
        out.iter()
            .filter(|p| p.0 == kind)
            .map(|p| serde_json::from_slice(&p.1).unwrap())
            .collect()
    }

    #[test]
    fn lock_step_waits_for_its_reading_and_for_the_senders() {
        let mut m = Monitor::new(&cfg(0, true)).unwrap();
        let tick0 = json(&Tick {
            epoch: 0,
            round: 0,
            senders: vec![],
        });
        assert!(m.on_tick(&tick0).unwrap().is_empty(), "no reading yet");
        let out = m.on_reading(&reading(0, 18.0)).unwrap();
        assert_eq!(
            of(&out, "update").len(),
            1,
            "the first reading is always sent"
        );
        let tick1 = json(&Tick {
            epoch: 0,
            round: 1,
            senders: vec![0, 1],
        });
        assert!(
            m.on_tick(&tick1).unwrap().is_empty(),
            "node 1's update is missing"
        );
        let u = json(&Update {
            epoch: 0,
            round: 0,
            origin: 1,
            seq: 1,
            vector: vec![300, 90_000],
            known: vec![],
        });
        let out = m.on_update(&u).unwrap();
        let status = &of(&out, "status")[0];
        assert_eq!(status["round"], 1);
        // readings 18 and 23 C: variance 6.25 > 2
        assert_eq!(status["side"], "Above");
        assert_eq!(of(&out, "alarm")[0]["side"], "Above");
    }

    #[test]
    fn free_mode_acts_at_once() {
        let mut a = Monitor::new(&cfg(0, false)).unwrap();
        let out = a.on_reading(&reading(0, 20.0)).unwrap();
        assert_eq!(of(&out, "update").len(), 1);
        assert!(Monitor::new(&GmConfig {
            zone: "cube".into(),
            ..cfg(0, false)
        })
        .is_err());
        assert!(Monitor::new(&GmConfig {
            id: 2,
            ..cfg(0, false)
        })
        .is_err());
    }
}

#[cfg(test)]
mod repair_tests {
    use super::*;

    /// Three monitors wired by hand: node 2 loses node 1's first update; node 0's next
    /// update tells it so, and its pull brings the update back.
    #[test]
    fn a_pull_brings_back_a_lost_update() {
        let mut m: Vec<Monitor> = (0..3)
            .map(|id| {
                Monitor::new(&GmConfig {
                    name: "lab".into(),
                    id,
                    nodes: 3,
                    repair: true,
                    ..GmConfig::default()
                })
                .unwrap()
            })
            .collect();
        let reading = |epoch, t| {
            serde_json::to_vec(&Reading {
                epoch,
                temperature: t,
                humidity: 35.0,
            })
            .unwrap()
        };
        let updates = |out: &[Publish]| -> Vec<Vec<u8>> {
            out.iter()
                .filter(|p| p.0 == "update")
                .map(|p| p.1.clone())
                .collect()
        };
        let mut first = Vec::new();
        for (i, mon) in m.iter_mut().enumerate() {
            first.push(updates(&mon.on_reading(&reading(0, 20.0)).unwrap()).remove(0));
            let _ = i;
        }
        // everyone hears everyone, except that node 2 misses node 1's update
        for (to, mon) in m.iter_mut().enumerate() {
            for (from, u) in first.iter().enumerate() {
                if from != to && !(to == 2 && from == 1) {
                    mon.on_update(u).unwrap();
                }
            }
        }
        let jump = updates(&m[0].on_reading(&reading(1, 25.0)).unwrap());
        assert_eq!(jump.len(), 1);
        m[2].on_update(&jump[0]).unwrap();
        let out = m[2].on_reading(&reading(2, 20.0)).unwrap();
        let pull = out.iter().find(|p| p.0 == "pull").expect("node 2 pulls");
        let answer = updates(&m[0].on_pull(&pull.1).unwrap());
        assert_eq!(answer.len(), 1);
        let out = m[2].on_update(&answer[0]).unwrap();
        let status: Status = serde_json::from_slice(&out.last().unwrap().1).unwrap();
        assert_eq!(status.seqs, vec![2, 1, 1]);
    }
}
