//! Network models: what happens to a message between `send` and `receive`.
//!
//! - [`Net::Lossless`]: every message arrives after a fixed latency.
//! - [`Net::Lossy`]: each destination of each message is lost independently with probability
//!   `loss`; latency is drawn uniformly per destination (the thesis' loss rate is also counted
//!   per destination, section 3.4).
//! - [`Net::Flood`]: a multi-hop radio graph; a broadcast is flooded (each node relays a packet
//!   the first time it hears it, thesis section 3.3.1), a unicast follows a shortest path;
//!   every link drops each transmission independently with probability `loss`.

use serde::Serialize;

use crate::rng::Rng;

/// Uniform latency in `[lo, hi]` milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    /// least
    pub lo: u64,
    /// most
    pub hi: u64,
}

impl Latency {
    /// A draw.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        if self.hi <= self.lo {
            self.lo
        } else {
            self.lo + rng.next_u64() % (self.hi - self.lo + 1)
        }
    }
}

/// A network model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Net {
    /// Nothing is lost; fixed latency.
    Lossless {
        /// milliseconds
        latency_ms: u64,
    },
    /// Independent loss per destination.
    Lossy {
        /// probability that one destination misses one message
        loss: f64,
        /// per destination
        latency: Latency,
    },
    /// Flooding over a multi-hop graph.
    Flood {
        /// who hears whom
        graph: Graph,
        /// probability that one link drops one transmission
        loss: f64,
        /// per hop
        latency: Latency,
    },
}

/// An undirected radio graph over the nodes; the coordinator, if any, sits at node 0.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Graph {
    /// neighbours of each node
    pub adj: Vec<Vec<usize>>,
}

impl Graph {
    /// Nodes at `positions` (metres) hear each other within `range`; the range is widened by
    /// 10 % steps until the graph is connected.
    pub fn from_positions(positions: &[(f64, f64)], range: f64) -> Graph {
        let n = positions.len();
        let mut r = range;
        loop {
            let adj: Vec<Vec<usize>> = (0..n)
                .map(|i| {
                    (0..n)
                        .filter(|&j| {
                            let (dx, dy) = (
                                positions[i].0 - positions[j].0,
                                positions[i].1 - positions[j].1,
                            );
                            j != i && (dx * dx + dy * dy).sqrt() <= r
                        })
                        .collect()
                })
                .collect();
            let g = Graph { adj };
            if g.hops(0).iter().all(|h| h.is_some()) {
                return g;
            }
            r *= 1.1;
        }
    }

    /// A `w`-wide grid of `n` nodes, 4-neighbour.
    pub fn grid(n: usize, w: usize) -> Graph {
        let pos: Vec<(f64, f64)> = (0..n).map(|i| ((i % w) as f64, (i / w) as f64)).collect();
        Graph::from_positions(&pos, 1.0)
    }

    /// Hop counts from `src` (breadth first).
    pub fn hops(&self, src: usize) -> Vec<Option<usize>> {
        let mut dist = vec![None; self.adj.len()];
        dist[src] = Some(0);
        let mut queue = std::collections::VecDeque::from([src]);
        while let Some(i) = queue.pop_front() {
            for &j in &self.adj[i] {
                if dist[j].is_none() {
                    dist[j] = Some(dist[i].unwrap_or(0) + 1);
                    queue.push_back(j);
                }
            }
        }
        dist
    }

    /// A shortest path `src -> dst` (both included).
    pub fn path(&self, src: usize, dst: usize) -> Vec<usize> {
        let dist = self.hops(dst);
        let mut path = vec![src];
        let mut at = src;
        while at != dst {
            let here = dist[at].unwrap_or(usize::MAX);
            at = *self.adj[at]
                .iter()
                .find(|&&j| dist[j].is_some_and(|d| d + 1 == here))
                .expect("the graph is connected");
            path.push(at);
        }
        path
    }

    /// The largest hop count between two nodes.
    pub fn diameter(&self) -> usize {
        (0..self.adj.len())
            .flat_map(|i| self.hops(i))
            .flatten()
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_paths_are_shortest() {
        let g = Graph::grid(9, 3);
        assert_eq!(g.path(0, 8).len(), 5);
        assert_eq!(g.diameter(), 4);
    }
}
