//! The verification round (V-PATCH section 2.4.1, "Verification"): exact comparison of the
//! patterns that could start at a candidate position, found through the trie of folded 4-byte
//! chunks (long patterns), the direct 2-byte index of `short` (2- and 3-byte patterns) and the
//! 1-byte table.

use crate::fold::{eq_exact, eq_folded, fold_u32, read_u32};
use crate::sink::Sink;
use crate::tables::{Entry, Tables, LONG_ROOT};

#[inline(always)]
fn check(t: &Tables, e: &Entry, hay: &[u8], s: usize) -> bool {
    let len = e.len as usize;
    if s + len > hay.len() {
        return false;
    }
    let pat = &t.arena[e.off as usize..e.off as usize + len];
    let h = &hay[s..s + len];
    if e.nocase {
        eq_folded(h, pat)
    } else {
        eq_exact(h, pat)
    }
}

#[inline(always)]
fn entries<S: Sink>(t: &Tables, node: u32, hay: &[u8], s: usize, min_end: usize, sink: &mut S) {
    let n = &t.nodes[node as usize];
    for e in &t.entries[n.start as usize..n.end as usize] {
        let end = s + e.len as usize;
        if end >= min_end && check(t, e, hay, s) {
            sink.emit(e.id, end);
        }
    }
}

/// Reports every pattern of at least 4 bytes that starts at `s`.
#[inline]
pub(crate) fn long<S: Sink>(t: &Tables, hay: &[u8], s: usize, min_end: usize, sink: &mut S) {
    if s + 4 > hay.len() {
        return;
    }
    let mut parent = LONG_ROOT;
    let mut chunk = fold_u32(read_u32(hay, s));
    loop {
        let Some(node) = t.map.get((u64::from(parent) << 32) | u64::from(chunk)) else {
            return;
        };
        entries(t, node, hay, s, min_end, sink);
        let n = &t.nodes[node as usize];
        let next = s + n.depth as usize;
        if !n.split || next + 4 > hay.len() {
            return;
        }
        parent = node;
        chunk = fold_u32(read_u32(hay, next));
    }
}

/// Reports every pattern of 2 or 3 bytes that starts at `s`.
#[inline]
pub(crate) fn short<S: Sink>(t: &Tables, hay: &[u8], s: usize, min_end: usize, sink: &mut S) {
    t.short.verify(hay, s, min_end, sink);
}

/// Reports the 1-byte patterns at every start in `from..to`.
#[inline]
pub(crate) fn one_bytes<S: Sink>(t: &Tables, hay: &[u8], from: usize, to: usize, sink: &mut S) {
    if sink.counts_only() {
        // Counting needs only how many patterns each byte matches.
        let n: u64 = hay[from..to]
            .iter()
            .map(|&b| u64::from(t.one_count[usize::from(b)]))
            .sum();
        sink.add(n);
        return;
    }
    for (k, &b) in hay[from..to].iter().enumerate() {
        let (a, z) = t.one[usize::from(b)];
        sink.emit_all(&t.one_ids[a as usize..z as usize], from + k + 1);
    }
}
