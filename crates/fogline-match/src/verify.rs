//! The verification round (V-PATCH section 2.4.1, "Verification"): exact comparison of the
//! patterns that could start at a candidate position, found through the trie of folded 4-byte
//! chunks (long patterns), the 2-byte table (2- and 3-byte patterns) and the 1-byte table.

use crate::fold::{eq_folded, fold, fold_u32, read_u32};
use crate::sink::Sink;
use crate::tables::{Entry, Tables, LONG_ROOT, SHORT_ROOT};

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
        h == pat
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

/// Reports every pattern of 1 to 3 bytes that starts at `s`.
#[inline]
pub(crate) fn short<S: Sink>(t: &Tables, hay: &[u8], s: usize, min_end: usize, sink: &mut S) {
    let (a, b) = t.one[usize::from(hay[s])];
    if s + 1 >= min_end {
        for &id in &t.one_ids[a as usize..b as usize] {
            sink.emit(id, s + 1);
        }
    }
    if s + 2 > hay.len() {
        return;
    }
    let chunk = u32::from(fold(hay[s])) | u32::from(fold(hay[s + 1])) << 8;
    if let Some(node) = t.map.get((u64::from(SHORT_ROOT) << 32) | u64::from(chunk)) {
        entries(t, node, hay, s, min_end, sink);
    }
}
