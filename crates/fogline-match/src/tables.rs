//! The compiled matcher: filters (cache-resident, consulted at every input position) and the
//! verification structures (consulted only for candidates that pass the filters).
//!
//! Invariants the scanners rely on:
//! - `filt12` has two bits per folded bigram `fold(b0) | fold(b1) << 8`: bit `2w` ("short") is
//!   set when a 2- or 3-byte pattern starts with the bigram (1-byte patterns need no filter: the
//!   scan checks every byte against `one`); bit `2w + 1` ("long") when a pattern of at least 4
//!   bytes starts with it.
//! - `pair2` has one byte per *raw* bigram `w = b0 | b1 << 8`, folding built in, for the
//!   strided table filter: bits `A0`, `B1`, `C2`, `D3` say that some long pattern has the bigram
//!   at offset 0, 1, 2 or 3 (`E1`, `H3`: the same for 4-byte patterns, see `A0`); bit `S` is
//!   the "short" bit of `filt12` (the filter looks up every position when the set has short
//!   patterns, every even one otherwise).
//! - `filt3` has one bit per hash of the folded first four bytes of every long pattern.
//! - Every long pattern is verified in exactly one trie node, every 2- or 3-byte one in one
//!   `short` entry, every 1-byte one in `one`, so a candidate position reports each matching
//!   pattern once.
//! - Arena bytes of a case-insensitive pattern are stored folded, others as given.

use crate::fold::{fold, fold_u32};
use crate::map::NodeMap;
use crate::runs::Runs;
use crate::short::Short;

/// Multiplier of the filter-3 hash (Knuth's golden-ratio constant).
pub(crate) const F3_MUL: u32 = 0x9E37_79B1;
/// A trie node with more entries than this is split on the next four bytes.
const SPLIT: usize = 8;
/// Node id of the root of the long-pattern trie.
pub(crate) const LONG_ROOT: u32 = 0;

/// One pattern as the builder received it.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    pub id: u32,
    pub bytes: Vec<u8>,
    pub nocase: bool,
}

/// One pattern to compare at a candidate position.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub id: u32,
    pub off: u32,
    pub len: u32,
    pub nocase: bool,
    /// The first (up to) eight stored bytes, little-endian, zero-padded.
    pub head: u64,
}

impl Entry {
    /// The entry of pattern `id` whose stored bytes (folded when `nocase`) are at `off`.
    pub(crate) fn new(id: u32, stored: &[u8], off: usize, nocase: bool) -> Entry {
        let mut w = [0u8; 8];
        let n = stored.len().min(8);
        w[..n].copy_from_slice(&stored[..n]);
        Entry {
            id,
            off: off as u32,
            len: stored.len() as u32,
            nocase,
            head: u64::from_le_bytes(w),
        }
    }
}

/// A trie node: the entries verified here, and whether children on the next four bytes exist.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Node {
    pub start: u32,
    pub end: u32,
    /// Pattern bytes already matched (folded) on the way to this node.
    pub depth: u32,
    pub split: bool,
}

/// Everything a scan needs, immutable after build.
#[derive(Debug, Clone)]
pub(crate) struct Tables {
    pub filt12: Box<[u32]>,
    pub pair2: Box<[u8]>,
    /// The 2- and 3-byte patterns.
    pub short: Short,
    /// Whether any 2- or 3-byte pattern exists (else the short filter is skipped).
    pub has_short: bool,
    /// Whether any 1-byte pattern exists (else the 1-byte pass is skipped).
    pub has_one: bool,
    pub filt3: Box<[u32]>,
    pub f3_shift: u32,
    /// 1-byte patterns by raw input byte: range into `one_ids`.
    pub one: Box<[(u32, u32)]>,
    pub one_ids: Box<[u32]>,
    /// Per raw input byte: how many 1-byte patterns match it.
    pub one_count: Box<[u32]>,
    /// `one_count` as bytes when every count fits (else empty), for the vector counter.
    pub one_count8: Box<[u8]>,
    pub entries: Box<[Entry]>,
    pub arena: Box<[u8]>,
    /// The long-pattern trie (nodes and edges in one table).
    pub map: NodeMap,
    /// What can match inside runs of one byte (see `runs`).
    pub runs: Runs,
    pub empty_ids: Box<[u32]>,
    pub max_len: usize,
}

/// Whether pattern byte `p` (folded if `nocase`) matches input byte `x`.
fn byte_matches(p: u8, nocase: bool, x: u8) -> bool {
    if nocase {
        p == fold(x)
    } else {
        p == x
    }
}

/// Folded little-endian `u32` of `bytes[at..at + 4]`.
fn chunk_at(bytes: &[u8], at: usize) -> u32 {
    fold_u32(u32::from_le_bytes([
        bytes[at],
        bytes[at + 1],
        bytes[at + 2],
        bytes[at + 3],
    ]))
}

pub(crate) fn f3_index(folded4: u32, shift: u32) -> u32 {
    folded4.wrapping_mul(F3_MUL) >> shift
}

struct Build<'a> {
    src: &'a [Source],
    /// Pattern bytes as stored in the arena (folded when nocase), by source index.
    stored: Vec<Vec<u8>>,
    entries: Vec<Entry>,
    arena: Vec<u8>,
    nodes: Vec<Node>,
    /// Trie edges: `(parent node, folded chunk, child node)`.
    edges: Vec<(u32, u32, u32)>,
}

impl Build<'_> {
    fn entry(&mut self, i: usize) -> Entry {
        let off = self.arena.len();
        self.arena.extend_from_slice(&self.stored[i]);
        Entry::new(self.src[i].id, &self.stored[i], off, self.src[i].nocase)
    }

    /// Adds a node at `depth` holding `group` (all at least `depth` bytes long, sharing their
    /// folded first `depth` bytes), splitting it when large. Returns the node id.
    fn node(&mut self, depth: usize, group: Vec<usize>) -> u32 {
        let id = self.nodes.len() as u32;
        let deeper = group.iter().any(|&i| self.stored[i].len() >= depth + 4);
        let split = depth >= 4 && group.len() > SPLIT && deeper;
        let (here, rest): (Vec<usize>, Vec<usize>) = if split {
            group
                .into_iter()
                .partition(|&i| self.stored[i].len() < depth + 4)
        } else {
            (group, Vec::new())
        };
        let start = self.entries.len() as u32;
        for i in here {
            let e = self.entry(i);
            self.entries.push(e);
        }
        self.nodes.push(Node {
            start,
            end: self.entries.len() as u32,
            depth: depth as u32,
            split,
        });
        if split {
            self.children(id, depth, rest);
        }
        id
    }

    /// Groups `group` by the folded four bytes at `depth` and adds one child of `parent` each.
    fn children(&mut self, parent: u32, depth: usize, group: Vec<usize>) {
        let mut keyed: Vec<(u32, usize)> = group
            .into_iter()
            .map(|i| (chunk_at(&self.stored[i], depth), i))
            .collect();
        keyed.sort_unstable();
        let mut at = 0;
        while at < keyed.len() {
            let chunk = keyed[at].0;
            let mut end = at;
            while end < keyed.len() && keyed[end].0 == chunk {
                end += 1;
            }
            let members = keyed[at..end].iter().map(|&(_, i)| i).collect();
            let child = self.node(depth + 4, members);
            self.edges.push((parent, chunk, child));
            at = end;
        }
    }
}

impl Tables {
    /// Compiles validated sources (lengths and counts already checked by the builder).
    pub(crate) fn build(src: &[Source]) -> Tables {
        let stored: Vec<Vec<u8>> = src
            .iter()
            .map(|s| {
                if s.nocase {
                    s.bytes.iter().map(|&b| fold(b)).collect()
                } else {
                    s.bytes.clone()
                }
            })
            .collect();
        let mut b = Build {
            src,
            stored,
            entries: Vec::new(),
            arena: Vec::new(),
            nodes: Vec::new(),
            edges: Vec::new(),
        };
        let mut filt12 = vec![0u32; 65536 * 2 / 32];
        let set12 = |f: &mut [u32], w: usize, bit: usize| f[w >> 4] |= 1 << ((w & 15) * 2 + bit);

        let mut empty_ids = Vec::new();
        let mut one_lists: Vec<Vec<u32>> = vec![Vec::new(); 256];
        let mut short = Vec::new();
        let mut long = Vec::new();
        let mut prefixes = Vec::new();
        // Folded bigrams of long patterns at offsets 0..4, one bit each (see `raw_pairs`).
        let mut at_offset = vec![0u8; 65536];
        for (i, s) in src.iter().enumerate() {
            let p = &b.stored[i];
            match p.len() {
                0 => empty_ids.push(s.id),
                1 => {
                    for x in 0..=255u8 {
                        if byte_matches(p[0], s.nocase, x) {
                            one_lists[usize::from(x)].push(s.id);
                        }
                    }
                }
                2 | 3 => {
                    set12(
                        &mut filt12,
                        usize::from(fold(p[0])) | usize::from(fold(p[1])) << 8,
                        0,
                    );
                    short.push(i);
                }
                _ => {
                    set12(
                        &mut filt12,
                        usize::from(fold(p[0])) | usize::from(fold(p[1])) << 8,
                        1,
                    );
                    prefixes.push(chunk_at(p, 0));
                    let pair = |a: u8, b: u8| usize::from(fold(a)) | usize::from(fold(b)) << 8;
                    at_offset[pair(p[0], p[1])] |= A0;
                    at_offset[pair(p[2], p[3])] |= C2;
                    match p.get(4) {
                        Some(&p4) => {
                            at_offset[pair(p[1], p[2])] |= B1;
                            at_offset[pair(p[3], p4)] |= D3;
                        }
                        None => {
                            // A 4-byte pattern has no bigram at offset 3; its own pair of bits
                            // keeps its "any next byte" from diluting D3.
                            at_offset[pair(p[1], p[2])] |= E1;
                            (0..=255u8).for_each(|x| at_offset[pair(p[3], x)] |= H3);
                        }
                    }
                    long.push(i);
                }
            }
        }

        let short_empty = short.is_empty();
        let has_one = one_lists.iter().any(|l| !l.is_empty());
        // Filter 3: about 16 bits per distinct prefix keeps its false-positive rate near 6%
        // while staying within L2 (at most 2^20 bits = 128 KiB).
        prefixes.sort_unstable();
        prefixes.dedup();
        let want = (prefixes.len().max(1) * 16).next_power_of_two();
        let bits = want.trailing_zeros().clamp(12, 20);
        let f3_shift = 32 - bits;
        let mut filt3 = vec![0u32; (1usize << bits) / 32];
        for &k in &prefixes {
            let h = f3_index(k, f3_shift) as usize;
            filt3[h >> 5] |= 1 << (h & 31);
        }

        // Node 0: root of the long trie.
        b.nodes.push(Node {
            start: 0,
            end: 0,
            depth: 0,
            split: true,
        });
        b.children(LONG_ROOT, 0, long);
        let short_list: Vec<(u32, &[u8], bool)> = short
            .iter()
            .map(|&i| (src[i].id, &b.stored[i][..], src[i].nocase))
            .collect();
        let short = Short::build(&short_list);

        let mut one = Vec::with_capacity(256);
        let mut one_ids = Vec::new();
        for list in one_lists {
            let start = one_ids.len() as u32;
            one_ids.extend(list);
            one.push((start, one_ids.len() as u32));
        }

        let one_count: Box<[u32]> = one.iter().map(|&(a, z)| z - a).collect();
        let one_count8 = one_count
            .iter()
            .map(|&n| u8::try_from(n).ok())
            .collect::<Option<Box<[u8]>>>()
            .unwrap_or_default();
        let runs = Runs::build(src, &b.stored);
        let max_len = b.stored.iter().map(Vec::len).max().unwrap_or(0);
        Tables {
            pair2: raw_pairs(&at_offset, &filt12),
            short,
            has_short: !short_empty,
            has_one,
            filt12: filt12.into_boxed_slice(),
            filt3: filt3.into_boxed_slice(),
            f3_shift,
            one: one.into_boxed_slice(),
            one_ids: one_ids.into_boxed_slice(),
            one_count,
            one_count8,
            entries: b.entries.into_boxed_slice(),
            arena: b.arena.into_boxed_slice(),
            map: NodeMap::new(&b.edges, &b.nodes, LONG_ROOT),
            runs,
            empty_ids: empty_ids.into_boxed_slice(),
            max_len,
        }
    }

    /// Bytes held by the compiled tables (for memory reports).
    pub(crate) fn heap_bytes(&self) -> usize {
        use std::mem::size_of_val;
        size_of_val(&*self.filt12)
            + size_of_val(&*self.pair2)
            + self.short.heap_bytes()
            + size_of_val(&*self.filt3)
            + size_of_val(&*self.one)
            + size_of_val(&*self.one_ids)
            + size_of_val(&*self.one_count)
            + size_of_val(&*self.one_count8)
            + size_of_val(&*self.entries)
            + size_of_val(&*self.arena)
            + self.map.heap_bytes()
            + self.runs.heap_bytes()
            + size_of_val(&*self.empty_ids)
    }
}

fn folded_pair(raw: usize) -> usize {
    usize::from(fold(raw as u8)) | usize::from(fold((raw >> 8) as u8)) << 8
}

/// Bits of `at_offset` and of the strided filter's table: a pattern of 5 bytes or more has the
/// bigram at offset 1 (`B1`) or 3 (`D3`); a pattern of 4 or more at offset 0 (`A0`) or 2 (`C2`);
/// a 4-byte pattern at offset 1 (`E1`), or its last byte is the bigram's first (`H3`).
pub(crate) const A0: u8 = 2;
pub(crate) const B1: u8 = 1;
pub(crate) const C2: u8 = 8;
pub(crate) const D3: u8 = 4;
pub(crate) const E1: u8 = 16;
pub(crate) const H3: u8 = 32;

/// Bit of the strided filter's table: a 2- or 3-byte pattern starts with the bigram.
pub(crate) const S: u8 = 64;

/// The strided filter's table, indexed by raw bigram (folding built in): the bits of
/// `at_offset` and the short bit of `filt12`.
fn raw_pairs(at_offset: &[u8], filt12: &[u32]) -> Box<[u8]> {
    (0..65536usize)
        .map(|raw| {
            let w = folded_pair(raw);
            let short = (filt12[w >> 4] >> ((w & 15) * 2)) & 1 != 0;
            at_offset[w] | if short { S } else { 0 }
        })
        .collect()
}
