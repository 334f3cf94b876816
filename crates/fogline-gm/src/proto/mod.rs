//! The protocols, as state machines: a reading or a message goes in, messages to send come out.
//! No clock, no I/O: the simulator and the fogline node component drive the same code.
//!
//! - [`broadcast`]: the thesis' coordinator-free protocol (section 3.3.1) and the two baselines
//!   (send every reading, send every k-th epoch), which share its message and its bookkeeping.
//! - [`coordinator`]: a coordinator with lazy synchronisation in the style of AutoMon.

pub mod broadcast;
pub mod coordinator;

use serde::{Deserialize, Serialize};

use crate::function::{Function, Side};
use crate::zone::Zone;

/// A participant's index: nodes are `0..n`; the coordinator, when there is one, is `n`.
pub type NodeId = usize;

/// What the participants say to each other.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Msg {
    /// Broadcast protocol: `origin`'s local vector, numbered so that old copies are dropped.
    Update {
        /// the node whose vector this is
        origin: NodeId,
        /// `origin`'s sequence number, from 1
        seq: u64,
        /// the local vector
        vector: Vec<i64>,
        /// With repair: the sequence number the sender holds for every origin (a version
        /// vector), so that a receiver learns what it missed; empty otherwise.
        known: Vec<u64>,
        /// With prediction: the origin's trend.
        #[serde(default)]
        trend: Option<broadcast::Trend>,
    },
    /// Broadcast protocol with repair, to a node whose version vector is ahead: send me
    /// the latest updates you hold from these origins.
    Pull {
        /// the origins
        origins: Vec<NodeId>,
    },
    /// Node to coordinator: my drift vector left my safe zone; here is my vector.
    Violation {
        /// the sender
        node: NodeId,
        /// the estimate version the node checked against
        version: u64,
        /// the local vector
        vector: Vec<i64>,
    },
    /// Coordinator to nodes (one broadcast): the listed nodes send me their vectors.
    Request {
        /// the coordinator's estimate version
        version: u64,
        /// who is asked
        nodes: Vec<NodeId>,
    },
    /// Node to coordinator: the answer to a request.
    Reply {
        /// the sender
        node: NodeId,
        /// the estimate version the node holds
        version: u64,
        /// the local vector
        vector: Vec<i64>,
    },
    /// Coordinator to nodes (one broadcast), a lazy sync: the listed nodes take `mean` as
    /// their drift vector, through new slack computed from the vector each last reported.
    /// The estimate stays.
    Balance {
        /// the estimate version the slack belongs to
        version: u64,
        /// the balancing set
        nodes: Vec<NodeId>,
        /// their mean drift vector
        mean: Vec<f64>,
    },
    /// Coordinator to nodes (one broadcast), a full sync: a new estimate made of the vectors
    /// each node last reported; slacks are zero.
    Sync {
        /// the new version
        version: u64,
        /// the sum of the local vectors the estimate is made of
        sum: Vec<i128>,
    },
    /// Coordinator to one node that reported against an old version: the current state.
    CatchUp {
        /// the current version
        version: u64,
        /// the sum of the local vectors of the estimate
        sum: Vec<i128>,
        /// this node's vector in that sum
        reference: Vec<i64>,
        /// this node's slack
        slack: Vec<f64>,
    },
}

impl Msg {
    /// The key the simulator tracks synchronisation by: (whose state, its version).
    pub fn sync_key(&self) -> Option<(NodeId, u64)> {
        match self {
            Msg::Update { origin, seq, .. } => Some((*origin, *seq)),
            _ => None,
        }
    }
}

/// Where a message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest {
    /// Every other participant (a radio broadcast; flooded on a multi-hop network).
    All,
    /// One participant.
    To(NodeId),
}

/// A message to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Out {
    /// where to
    pub dest: Dest,
    /// what
    pub msg: Msg,
}

/// One protocol participant.
pub trait Participant {
    /// A new local vector at the start of `epoch` (nodes only).
    fn on_reading(&mut self, epoch: u64, vector: &[i64], out: &mut Vec<Out>);
    /// A message from `from`.
    fn on_message(&mut self, from: NodeId, msg: &Msg, out: &mut Vec<Out>);
    /// The end of `epoch`: a chance to retransmit what is still unanswered.
    fn on_tick(&mut self, _epoch: u64, _out: &mut Vec<Out>) {}
    /// Which side of the threshold this participant believes `f(v)` is on, once it knows.
    fn belief(&self) -> Option<Side>;
    /// The sum of local vectors this participant's estimate is made of.
    fn estimate(&self) -> Option<Vec<i128>>;
    /// This participant's estimate version with respect to the coordinator (coordinator
    /// protocol only): the simulator measures out-of-sync time with it.
    fn version(&self) -> Option<u64> {
        None
    }
}

/// Which protocol to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Protocol {
    /// The thesis' broadcast protocol with the given zone.
    Broadcast(Zone),
    /// The broadcast protocol plus repair: updates carry the sender's version vector, and a
    /// receiver that is behind pulls what it missed from the sender.
    Repair(Zone),
    /// The coordinator with lazy sync, with the given zone.
    Coordinator(Zone),
    /// The broadcast protocol with a velocity model: updates carry the origin's trend, and
    /// every node predicts every origin's readings along it.
    Predict(Zone),
    /// Prediction and repair together.
    PredictRepair(Zone),
    /// Every node broadcasts every reading (the thesis' baseline).
    EveryReading,
    /// Every node broadcasts its reading every `k` epochs.
    Periodic(u64),
}

impl Protocol {
    /// A short label, e.g. `broadcast/ball`.
    pub fn label(&self) -> String {
        match self {
            Protocol::Broadcast(z) => format!("broadcast/{}", z.name()),
            Protocol::Repair(z) => format!("repair/{}", z.name()),
            Protocol::Predict(z) => format!("predict/{}", z.name()),
            Protocol::PredictRepair(z) => format!("predict+repair/{}", z.name()),
            Protocol::Coordinator(z) => format!("coordinator/{}", z.name()),
            Protocol::EveryReading => "every-reading".into(),
            Protocol::Periodic(k) => format!("periodic/{k}"),
        }
    }

    /// Parses [`Protocol::label`].
    pub fn parse(s: &str) -> Option<Protocol> {
        let (head, tail) = s.split_once('/').unwrap_or((s, ""));
        match head {
            "broadcast" => Zone::parse(tail).map(Protocol::Broadcast),
            "repair" => Zone::parse(tail).map(Protocol::Repair),
            "predict" => Zone::parse(tail).map(Protocol::Predict),
            "predict+repair" => Zone::parse(tail).map(Protocol::PredictRepair),
            "coordinator" => Zone::parse(tail).map(Protocol::Coordinator),
            "every-reading" if tail.is_empty() => Some(Protocol::EveryReading),
            "periodic" => tail.parse().ok().filter(|&k| k > 0).map(Protocol::Periodic),
            _ => None,
        }
    }

    /// Whether the protocol has a coordinator (participant `n`).
    pub fn has_coordinator(&self) -> bool {
        matches!(self, Protocol::Coordinator(_))
    }

    /// The participants for `n` nodes: `n` nodes, then the coordinator if there is one.
    pub fn participants(&self, f: &Function, n: usize) -> Vec<Box<dyn Participant>> {
        use broadcast::{BroadcastNode, Policy};
        use coordinator::{Coordinator, CoordinatorNode};
        let mut out: Vec<Box<dyn Participant>> = Vec::new();
        for id in 0..n {
            out.push(match *self {
                Protocol::Broadcast(z) => {
                    Box::new(BroadcastNode::new(id, n, f.clone(), Policy::Zone(z)))
                }
                Protocol::Repair(z) => {
                    Box::new(BroadcastNode::new(id, n, f.clone(), Policy::Zone(z)).with_repair())
                }
                Protocol::Predict(z) => Box::new(
                    BroadcastNode::new(id, n, f.clone(), Policy::Zone(z)).with_prediction(),
                ),
                Protocol::PredictRepair(z) => Box::new(
                    BroadcastNode::new(id, n, f.clone(), Policy::Zone(z))
                        .with_prediction()
                        .with_repair(),
                ),
                Protocol::EveryReading => {
                    Box::new(BroadcastNode::new(id, n, f.clone(), Policy::Always))
                }
                Protocol::Periodic(k) => {
                    Box::new(BroadcastNode::new(id, n, f.clone(), Policy::Every(k)))
                }
                Protocol::Coordinator(z) => Box::new(CoordinatorNode::new(id, n, f.clone(), z)),
            });
        }
        if let Protocol::Coordinator(z) = *self {
            out.push(Box::new(Coordinator::new(n, f.clone(), z)));
        }
        out
    }
}

/// The slack that makes a node's drift vector `mean` (a lazy sync): the node and the
/// coordinator both compute it, with the same arithmetic, from the vector the node reported.
pub(crate) fn balance_slack(mean: &[f64], e: &[f64], v: &[i64], reference: &[i64]) -> Vec<f64> {
    (0..e.len())
        .map(|k| mean[k] - e[k] - (v[k] - reference[k]) as f64)
        .collect()
}

/// `e + (v - reference) + slack`, the drift vector, in `f64`.
pub(crate) fn drift(e: &[f64], v: &[i64], reference: &[i64], slack: Option<&[f64]>) -> Vec<f64> {
    (0..e.len())
        .map(|k| e[k] + (v[k] - reference[k]) as f64 + slack.map_or(0.0, |s| s[k]))
        .collect()
}
