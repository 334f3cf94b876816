//! The metrics of one run, from the engine's trace and the oracle's sides.
//!
//! - `missed`: (crossing, decider) pairs where the decider never reached the new side before
//!   the oracle changed side again (or the run ended).
//! - `false_alarms`: belief changes to a side the oracle was not on at that moment.
//! - `wrong_epochs`: (epoch, decider) pairs whose belief at the end of the epoch, just before
//!   the next readings, differs from the oracle's side for that epoch.
//! - `out_of_sync_mean_ms`: the thesis' accuracy (section 3.5.4): the mean length of a spell
//!   during which a node lacks an origin's latest update (broadcast) or the coordinator's
//!   latest estimate (coordinator), in-flight time included.
//! - `detection_mean_ms`: the thesis' responsiveness: from the epoch at which `f(v)` crossed
//!   to the moment a decider believes it, over detected pairs.

use serde::Serialize;

use super::{Config, Trace};
use crate::function::Side;
use crate::proto::NodeId;

/// The measured outcome of one run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// protocol and zone
    pub protocol: String,
    /// nodes
    pub nodes: usize,
    /// epochs
    pub epochs: usize,
    /// readings taken (nodes x epochs): what the every-reading baseline sends
    pub readings: u64,
    /// transmissions (a broadcast is one; a relay or a hop is one more)
    pub sent: u64,
    /// messages handed to a participant
    pub delivered: u64,
    /// (message, destination) or (transmission, link) pairs lost
    pub lost: u64,
    /// readings / sent
    pub reduction: f64,
    /// true crossings (oracle)
    pub crossings: usize,
    /// (crossing, decider) pairs never detected
    pub missed: usize,
    /// crossings missed by at least one decider
    pub crossings_missed: usize,
    /// belief changes to the wrong side
    pub false_alarms: usize,
    /// (epoch, decider) pairs wrong at the end of the epoch
    pub wrong_epochs: usize,
    /// epochs at whose end not every participant held the same estimate
    pub mismatch_epochs: usize,
    /// mean out-of-sync spell (ms)
    pub out_of_sync_mean_ms: f64,
    /// number of out-of-sync spells
    pub out_of_sync_spells: u64,
    /// mean detection time over detected (crossing, decider) pairs (ms)
    pub detection_mean_ms: f64,
}

fn belief_at(log: &[(u64, Side)], t: u64) -> Option<Side> {
    let i = log.partition_point(|&(at, _)| at <= t);
    (i > 0).then(|| log[i - 1].1)
}

pub(super) fn report(
    cfg: &Config,
    n: usize,
    sides: &[Side],
    deciders: &[NodeId],
    trace: Trace,
) -> Report {
    let period = cfg.period_ms;
    let crossings = crate::oracle::crossings(sides);
    let end = sides.len() as u64 * period;
    let (mut missed, mut crossings_missed, mut detected, mut detect_total) = (0, 0, 0u64, 0u64);
    for (i, &k) in crossings.iter().enumerate() {
        let start = k as u64 * period;
        let stop = crossings.get(i + 1).map_or(end, |&k2| k2 as u64 * period);
        let want = sides[k];
        let mut any_missed = false;
        for &d in deciders {
            let log = &trace.beliefs[d];
            let mut when = (belief_at(log, start) == Some(want)).then_some(start);
            if when.is_none() {
                when = log
                    .iter()
                    .find(|&&(t, b)| t > start && t < stop && b == want)
                    .map(|&(t, _)| t);
            }
            match when {
                Some(t) => {
                    detected += 1;
                    detect_total += t - start;
                }
                None => {
                    missed += 1;
                    any_missed = true;
                }
            }
        }
        crossings_missed += usize::from(any_missed);
    }
    let mut false_alarms = 0;
    for &d in deciders {
        let log = &trace.beliefs[d];
        for (j, &(t, b)) in log.iter().enumerate() {
            let epoch = ((t / period) as usize).min(sides.len() - 1);
            if j > 0 && b != sides[epoch] {
                false_alarms += 1;
            }
        }
    }
    let readings = (n * sides.len()) as u64;
    Report {
        protocol: cfg.protocol.label(),
        nodes: n,
        epochs: sides.len(),
        readings,
        sent: trace.sent,
        delivered: trace.delivered,
        lost: trace.lost,
        reduction: readings as f64 / trace.sent.max(1) as f64,
        crossings: crossings.len(),
        missed,
        crossings_missed,
        false_alarms,
        wrong_epochs: trace.wrong_epochs,
        mismatch_epochs: trace.mismatch_epochs,
        out_of_sync_mean_ms: trace.sync_total_ms as f64 / trace.sync_intervals.max(1) as f64,
        out_of_sync_spells: trace.sync_intervals,
        detection_mean_ms: detect_total as f64 / detected.max(1) as f64,
    }
}
