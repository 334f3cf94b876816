//! The `[gm]` section and the records a monitor reads and writes (JSON).

use serde::{Deserialize, Serialize};

use crate::function::Side;

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
    /// ball, box, convex or band
    pub zone: String,
    /// `broadcast` (the thesis', coordinator-free) or `coordinator` (lazy sync; the
    /// coordinator is index `nodes`)
    pub protocol: String,
    /// every node's native address, in index order
    pub peers: Vec<String>,
    /// act on ticks only
    pub lockstep: bool,
    /// updates carry the sender's version vector, and a node behind pulls what it missed
    pub repair: bool,
    /// updates carry the sender's trend, and every node predicts every origin's readings
    /// along it (broadcast protocol)
    pub predict: bool,
    /// drop this fraction of incoming updates (fault injection for experiments and tests)
    pub inject_loss: f64,
    /// only those sent in epochs below this one (default: all)
    pub inject_loss_until: Option<u64>,
    /// the user this node logs in as on its peers (their `[auth]`), and its password
    pub username: Option<String>,
    /// (needs `username`)
    pub password: Option<String>,
    /// PEM file of the CA the peers' certificates chain to: `peers` are TLS addresses
    /// (`[native] tls_listen`)
    pub cafile: Option<std::path::PathBuf>,
    /// this node's client certificate and key, for peers that require one (need `cafile`)
    pub certfile: Option<std::path::PathBuf>,
    /// (with `certfile`)
    pub keyfile: Option<std::path::PathBuf>,
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
            protocol: "broadcast".into(),
            peers: Vec::new(),
            lockstep: false,
            repair: false,
            predict: false,
            inject_loss: 0.0,
            inject_loss_until: None,
            username: None,
            password: None,
            cafile: None,
            certfile: None,
            keyfile: None,
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
    /// with prediction: the sender's trend
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trend: Option<crate::proto::broadcast::Trend>,
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

/// A coordinator-protocol message between two participants (`to`: none for everyone).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// the sender
    pub from: usize,
    /// the addressee, or everyone
    pub to: Option<usize>,
    /// the sender's epoch
    pub epoch: u64,
    /// the message
    pub msg: crate::proto::Msg,
}
