//! Numeric ranges of one attribute: a treap ordered by low bound, each node carrying the
//! highest high bound of its subtree, so a stabbing query visits only subtrees that can hold
//! a range containing the number: O(k log n) expected for k answers.

use std::cmp::Ordering;

const NIL: u32 = u32::MAX;

/// A range and who owns it: `(slot, term index)` makes every key unique.
#[derive(Clone, Copy)]
struct Node {
    low: f64,
    high: f64,
    slot: u32,
    term: u32,
    prio: u32,
    max_high: f64,
    left: u32,
    right: u32,
}

/// The ranges of one attribute.
pub(crate) struct RangeTree {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    seed: u64,
    len: usize,
    /// Inserts since the nodes were last laid out in key order.
    inserts: usize,
}

impl RangeTree {
    pub(crate) fn new() -> Self {
        RangeTree {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            seed: 0x9E37_79B9_7F4A_7C15,
            len: 0,
            inserts: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>() + self.free.capacity() * 4
    }

    fn cmp_key(&self, n: u32, low: f64, high: f64, slot: u32, term: u32) -> Ordering {
        let a = &self.nodes[n as usize];
        a.low
            .total_cmp(&low)
            .then(a.high.total_cmp(&high))
            .then(a.slot.cmp(&slot))
            .then(a.term.cmp(&term))
    }

    fn update(&mut self, n: u32) {
        let node = self.nodes[n as usize];
        let mut m = node.high;
        for c in [node.left, node.right] {
            if c != NIL {
                m = m.max(self.nodes[c as usize].max_high);
            }
        }
        self.nodes[n as usize].max_high = m;
    }

    /// Splits `t` into keys before the key and the rest (`inclusive`: the key goes left).
    fn split(&mut self, t: u32, key: (f64, f64, u32, u32), inclusive: bool) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        let ord = self.cmp_key(t, key.0, key.1, key.2, key.3);
        let goes_left = ord == Ordering::Less || (inclusive && ord == Ordering::Equal);
        if goes_left {
            let (l, r) = self.split(self.nodes[t as usize].right, key, inclusive);
            self.nodes[t as usize].right = l;
            self.update(t);
            (t, r)
        } else {
            let (l, r) = self.split(self.nodes[t as usize].left, key, inclusive);
            self.nodes[t as usize].left = r;
            self.update(t);
            (l, t)
        }
    }

    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio >= self.nodes[b as usize].prio {
            let r = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = r;
            self.update(a);
            a
        } else {
            let l = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = l;
            self.update(b);
            b
        }
    }

    fn next_prio(&mut self) -> u32 {
        // xorshift: priorities only need to look random to keep the tree shallow.
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        (self.seed >> 32) as u32
    }

    /// Adds `[low, high]` (infinite for an open end) owned by `(slot, term)`.
    pub(crate) fn insert(&mut self, low: f64, high: f64, slot: u32, term: u32) {
        let node = Node {
            low,
            high,
            slot,
            term,
            prio: self.next_prio(),
            max_high: high,
            left: NIL,
            right: NIL,
        };
        let n = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        let (l, r) = self.split(self.root, (low, high, slot, term), false);
        let l = self.merge(l, n);
        self.root = self.merge(l, r);
        self.len += 1;
        self.inserts += 1;
        if self.inserts > 64 && self.inserts > self.len / 8 {
            self.compact();
        }
    }

    /// Lays the nodes out in key order, so a query walking neighbouring keys reads
    /// neighbouring memory. O(n), after n/8 inserts: O(8) node copies amortized per insert.
    fn compact(&mut self) {
        self.inserts = 0;
        let mut order = Vec::with_capacity(self.len);
        let (mut stack, mut t) = (Vec::new(), self.root);
        while t != NIL || !stack.is_empty() {
            while t != NIL {
                stack.push(t);
                t = self.nodes[t as usize].left;
            }
            let n = stack.pop().expect("non-empty");
            order.push(n);
            t = self.nodes[n as usize].right;
        }
        let mut new_of = vec![NIL; self.nodes.len()];
        for (i, &n) in order.iter().enumerate() {
            new_of[n as usize] = i as u32;
        }
        let map = |x: u32| if x == NIL { NIL } else { new_of[x as usize] };
        let nodes = order
            .iter()
            .map(|&n| {
                let mut node = self.nodes[n as usize];
                node.left = map(node.left);
                node.right = map(node.right);
                node
            })
            .collect();
        self.root = map(self.root);
        self.nodes = nodes;
        self.free.clear();
    }

    /// Removes the range inserted with these arguments; false when absent.
    pub(crate) fn remove(&mut self, low: f64, high: f64, slot: u32, term: u32) -> bool {
        let key = (low, high, slot, term);
        let (l, r) = self.split(self.root, key, false);
        let (m, r) = self.split(r, key, true);
        let found = m != NIL;
        if found {
            // Keys are unique, so `m` is a single node.
            self.free.push(m);
            self.len -= 1;
        }
        self.root = self.merge(l, r);
        found
    }

    /// Calls `hit(slot)` for every range containing `x`.
    pub(crate) fn stab(&self, x: f64, hit: &mut impl FnMut(u32)) {
        self.stab_at(self.root, x, hit);
    }

    fn stab_at(&self, t: u32, x: f64, hit: &mut impl FnMut(u32)) {
        if t == NIL {
            return;
        }
        let n = &self.nodes[t as usize];
        if n.max_high < x {
            return;
        }
        self.stab_at(n.left, x, hit);
        if n.low <= x {
            if x <= n.high {
                hit(n.slot);
            }
            // Only keys with a low bound at least this one's lie right.
            self.stab_at(n.right, x, hit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stab_insert_remove() {
        let mut t = RangeTree::new();
        for i in 0..200u32 {
            t.insert(i as f64, i as f64 + 10.0, i, 0);
        }
        t.insert(f64::NEG_INFINITY, f64::INFINITY, 999, 0);
        let mut got = Vec::new();
        t.stab(50.5, &mut |s| got.push(s));
        got.sort();
        let mut want: Vec<u32> = (41..=50).collect();
        want.push(999);
        assert_eq!(got, want);
        assert!(t.remove(45.0, 55.0, 45, 0));
        assert!(!t.remove(45.0, 55.0, 45, 0));
        got.clear();
        t.stab(50.5, &mut |s| got.push(s));
        assert_eq!(got.len(), 10);
        assert_eq!(t.len(), 200);
    }

    proptest::proptest! {
        // Enough inserts that the nodes get laid out again several times.
        #[test]
        fn stab_equals_scan(
            ranges in proptest::collection::vec((-50i32..50, 0i32..20), 1..400),
            drop_every in 2usize..5,
            x in -60i32..60,
        ) {
            let mut t = RangeTree::new();
            let mut live = Vec::new();
            for (i, &(lo, w)) in ranges.iter().enumerate() {
                let (l, h) = (lo as f64, (lo + w) as f64);
                t.insert(l, h, i as u32, 0);
                live.push((l, h, i as u32));
                if i % drop_every == 0 {
                    let (l, h, s) = live.swap_remove(i % live.len());
                    proptest::prop_assert!(t.remove(l, h, s, 0));
                }
            }
            let mut got = Vec::new();
            t.stab(x as f64, &mut |s| got.push(s));
            got.sort();
            let x = x as f64;
            let mut want: Vec<u32> =
                live.iter().filter(|r| r.0 <= x && x <= r.1).map(|r| r.2).collect();
            want.sort();
            proptest::prop_assert_eq!(got, want);
            proptest::prop_assert_eq!(t.len(), live.len());
        }
    }
}
