//! Lock-step rounds: the broadcast protocol with its messages grouped in rounds, so that the
//! outcome does not depend on the order in which messages of one round arrive. Round 0 of an
//! epoch: every node takes its reading (regular updates); round `r`: every node takes all the
//! updates of round `r - 1`, then checks its zone once (triggered updates); the epoch ends
//! with a round in which nobody sends.
//!
//! This is the schedule the distributed mode runs when driven in lock step, so the two can be
//! compared message for message.

use serde::Serialize;

use crate::function::{Function, Side};
use crate::proto::broadcast::{BroadcastNode, Policy};
use crate::proto::{Msg, Out, Participant};

/// One epoch under lock-step rounds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EpochRounds {
    /// the updates of each round, in node order: (origin, seq, vector)
    pub rounds: Vec<Vec<(usize, u64, Vec<i64>)>>,
    /// every node's decision at the end of the epoch
    pub sides: Vec<Side>,
}

/// Runs `policy` over `vectors[epoch][node]` in lock-step rounds.
pub fn run(f: &Function, vectors: &[Vec<Vec<i64>>], policy: Policy) -> Vec<EpochRounds> {
    run_with(f, vectors, policy, false)
}

/// As [`run`], with every node predicting along the trends (`predict/ZONE`) when `predict`.
pub fn run_with(
    f: &Function,
    vectors: &[Vec<Vec<i64>>],
    policy: Policy,
    predict: bool,
) -> Vec<EpochRounds> {
    let n = vectors.first().map_or(0, |e| e.len());
    let mut nodes: Vec<BroadcastNode> = (0..n)
        .map(|id| {
            let node = BroadcastNode::new(id, n, f.clone(), policy);
            if predict {
                node.with_prediction()
            } else {
                node
            }
        })
        .collect();
    let mut out = Vec::with_capacity(vectors.len());
    for (k, epoch) in vectors.iter().enumerate() {
        let mut rounds = Vec::new();
        let mut sent: Vec<Msg> = Vec::new();
        for (node, v) in nodes.iter_mut().zip(epoch) {
            let mut o = Vec::new();
            node.on_reading(k as u64, v, &mut o);
            sent.extend(o.into_iter().map(|x: Out| x.msg));
        }
        while !sent.is_empty() {
            rounds.push(sent.iter().filter_map(summary).collect());
            let mut next = Vec::new();
            for node in nodes.iter_mut() {
                for m in &sent {
                    node.absorb(m);
                }
                let mut o = Vec::new();
                node.check(&mut o);
                next.extend(o.into_iter().map(|x| x.msg));
            }
            sent = next;
        }
        out.push(EpochRounds {
            rounds,
            sides: nodes
                .iter()
                .map(|nd| nd.belief().unwrap_or(Side::Below))
                .collect(),
        });
    }
    out
}

/// (origin, seq, vector) of an update.
pub fn summary(m: &Msg) -> Option<(usize, u64, Vec<i64>)> {
    match m {
        Msg::Update {
            origin,
            seq,
            vector,
            ..
        } => Some((*origin, *seq, vector.clone())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::parametric::parametric;
    use crate::function::Kind;
    use crate::zone::Zone;

    #[test]
    fn rounds_decide_like_the_oracle() {
        let f = Function::thesis(Kind::Variance);
        let v = parametric(8, 22, 1300, 2).vectors(&f);
        let sides = crate::oracle::sides(&f, &v);
        for (zone, predict) in [
            (Zone::Ball, false),
            (Zone::Convex, false),
            (Zone::Convex, true),
            (Zone::Band, true),
        ] {
            let log = run_with(&f, &v, Policy::Zone(zone), predict);
            for (k, e) in log.iter().enumerate() {
                assert!(e.sides.iter().all(|&s| s == sides[k]), "{zone:?} epoch {k}");
            }
            assert!(
                log.iter().any(|e| e.rounds.len() > 1),
                "triggered updates happen"
            );
        }
    }
}
