//! The long-pattern trie as one open-addressing hash table, built once and read-only after.
//!
//! Layout: a power-of-two array of slots at most half full, linear probing. A slot is an edge
//! of the trie: its key is `parent slot << 32 | folded chunk` (the root's children have parent
//! `ROOT`), and it holds the child node itself: the range of its entries and whether it has
//! children. A node is named by the index of its slot, so a lookup is one probe, with no second
//! load of a node record (the probe was the longest dependent load of long verification).
//! Parents are inserted before their children, and linear probing never moves a slot, so the
//! index a child's key names stays valid. An empty slot has `end == EMPTY`.

use crate::tables::Node;

const EMPTY: u32 = u32::MAX;
/// Marks `end` of a node with children.
const SPLIT: u32 = 1 << 31;
const MUL: u64 = 0x9E37_79B9_7F4A_7C15;
/// Parent "slot" of the root's children (never a real slot index: at most 2^31 slots).
pub(crate) const ROOT: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Slot {
    key: u64,
    start: u32,
    /// End of the entry range, `SPLIT` set when the node has children; `EMPTY` for no slot.
    end: u32,
}

/// A node found by [`NodeMap::get`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found {
    /// The node's name, to look up its children.
    pub slot: u32,
    pub start: u32,
    pub end: u32,
    pub split: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct NodeMap {
    slots: Box<[Slot]>,
    shift: u32,
}

impl NodeMap {
    /// Builds the map from the trie's edges `(parent node, chunk, child node)`; node `root` is
    /// the root, each child appears once, and entry ranges end below 2^31.
    pub(crate) fn new(edges: &[(u32, u32, u32)], nodes: &[Node], root: u32) -> NodeMap {
        let cap = (edges.len() * 2).next_power_of_two().max(16);
        let shift = 64 - cap.trailing_zeros();
        let empty = Slot {
            key: 0,
            start: 0,
            end: EMPTY,
        };
        let mut slots = vec![empty; cap].into_boxed_slice();
        let mut slot_of = vec![ROOT; nodes.len()];
        let mut order: Vec<&(u32, u32, u32)> = edges.iter().collect();
        order.sort_by_key(|&&(_, _, child)| nodes[child as usize].depth);
        for &&(parent, chunk, child) in &order {
            let p = if parent == root {
                ROOT
            } else {
                slot_of[parent as usize]
            };
            let k = key(p, chunk);
            let mut h = (k.wrapping_mul(MUL) >> shift) as usize;
            while slots[h].end != EMPTY {
                h = (h + 1) & (cap - 1);
            }
            let n = &nodes[child as usize];
            debug_assert!(n.end < SPLIT);
            slots[h] = Slot {
                key: k,
                start: n.start,
                end: n.end | if n.split { SPLIT } else { 0 },
            };
            slot_of[child as usize] = h as u32;
        }
        NodeMap { slots, shift }
    }

    /// The child of `parent` (a slot, or `ROOT`) on the folded four bytes `chunk`.
    #[inline(always)]
    pub(crate) fn get(&self, parent: u32, chunk: u32) -> Option<Found> {
        let k = key(parent, chunk);
        let mask = self.slots.len() - 1;
        let mut h = (k.wrapping_mul(MUL) >> self.shift) as usize;
        loop {
            let s = self.slots[h];
            if s.end == EMPTY {
                return None;
            }
            if s.key == k {
                return Some(Found {
                    slot: h as u32,
                    start: s.start,
                    end: s.end & !SPLIT,
                    split: s.end & SPLIT != 0,
                });
            }
            h = (h + 1) & mask;
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.slots)
    }
}

fn key(parent: u32, chunk: u32) -> u64 {
    (u64::from(parent) << 32) | u64::from(chunk)
}

#[cfg(test)]
mod tests {
    use super::{NodeMap, ROOT};
    use crate::tables::Node;

    #[test]
    fn finds_every_edge_and_no_other() {
        // Node 0 is the root; node i (1..=1000) has entries i..i+1; nodes 1..=10 have one
        // child each (1000 + i), found through their slot.
        let mut nodes: Vec<Node> = (0..=1010u32)
            .map(|i| Node {
                start: i,
                end: i + 1,
                depth: if i > 1000 { 8 } else { 4 },
                split: (1..=10).contains(&i),
            })
            .collect();
        nodes[0].depth = 0;
        let mut edges: Vec<(u32, u32, u32)> = (1..=1000u32).map(|i| (0, i * 7919, i)).collect();
        edges.extend((1..=10u32).map(|i| (i, 5, 1000 + i)));
        // Children listed first: insertion must still put parents first.
        edges.reverse();
        let m = NodeMap::new(&edges, &nodes, 0);
        for i in 1..=1000u32 {
            let f = m.get(ROOT, i * 7919).unwrap();
            assert_eq!((f.start, f.end, f.split), (i, i + 1, (1..=10).contains(&i)));
            if f.split {
                let c = m.get(f.slot, 5).unwrap();
                assert_eq!((c.start, c.split), (1000 + i, false));
                assert!(m.get(f.slot, 6).is_none());
            }
        }
        assert!(m.get(ROOT, 1).is_none());
        assert!(NodeMap::new(&[], &nodes[..1], 0).get(ROOT, 0).is_none());
    }
}
