//! Verification of 2- and 3-byte patterns: a direct index from the folded first two bytes, no
//! hashing. Real signature sets are dominated by short patterns that match at a large share of
//! positions (`et2017_all` gives about one match per input byte), so this path runs nearly
//! everywhere and must not miss the cache.
//!
//! Layout: `present` has one bit per folded bigram that starts some pattern; `rank[k]` counts the
//! bits in words `0..k`, so a present bigram's rank indexes `at`, whose consecutive values bound
//! its run of `entries`. An entry holds its pattern as a little-endian `u32` with a mask of its
//! length, so a comparison is one and-compare on the (folded, for nocase) input word.

use crate::fold::{fold, fold_u32};
use crate::sink::Sink;

#[derive(Debug, Clone, Copy)]
struct Entry {
    id: u32,
    value: u32,
    mask: u32,
    len: u32,
    nocase: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Short {
    present: Box<[u64]>,
    rank: Box<[u32]>,
    at: Box<[u32]>,
    entries: Box<[Entry]>,
}

fn bigram(a: u8, b: u8) -> usize {
    usize::from(fold(a)) | usize::from(fold(b)) << 8
}

impl Short {
    /// `patterns`: `(id, stored bytes (folded when nocase), nocase)`, each 2 or 3 bytes long.
    pub(crate) fn build(patterns: &[(u32, &[u8], bool)]) -> Short {
        let mut keyed: Vec<(usize, Entry)> = patterns
            .iter()
            .map(|&(id, p, nocase)| {
                let mut v = [0u8; 4];
                v[..p.len()].copy_from_slice(p);
                let entry = Entry {
                    id,
                    value: u32::from_le_bytes(v),
                    mask: u32::MAX >> (8 * (4 - p.len())),
                    len: p.len() as u32,
                    nocase,
                };
                (bigram(p[0], p[1]), entry)
            })
            .collect();
        keyed.sort_by_key(|&(w, e)| (w, e.id));
        let mut present = vec![0u64; 65536 / 64];
        let mut at = Vec::new();
        for (k, &(w, _)) in keyed.iter().enumerate() {
            if present[w >> 6] & (1 << (w & 63)) == 0 {
                present[w >> 6] |= 1 << (w & 63);
                at.push(k as u32);
            }
        }
        at.push(keyed.len() as u32);
        let mut rank = Vec::with_capacity(present.len());
        let mut total = 0u32;
        for word in &present {
            rank.push(total);
            total += word.count_ones();
        }
        Short {
            present: present.into_boxed_slice(),
            rank: rank.into_boxed_slice(),
            at: at.into_boxed_slice(),
            entries: keyed.into_iter().map(|(_, e)| e).collect(),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        use std::mem::size_of_val;
        size_of_val(&*self.present)
            + size_of_val(&*self.rank)
            + size_of_val(&*self.at)
            + size_of_val(&*self.entries)
    }

    /// Reports every 2- or 3-byte pattern starting at `s` (and ending at or after `min_end`).
    #[inline(always)]
    pub(crate) fn verify<S: Sink>(&self, hay: &[u8], s: usize, min_end: usize, sink: &mut S) {
        if s + 2 > hay.len() {
            return;
        }
        let w = bigram(hay[s], hay[s + 1]);
        let bits = self.present[w >> 6];
        if bits & (1 << (w & 63)) == 0 {
            return;
        }
        let r = self.rank[w >> 6] + (bits & ((1 << (w & 63)) - 1)).count_ones();
        let (a, b) = (
            self.at[r as usize] as usize,
            self.at[r as usize + 1] as usize,
        );
        // The input word at `s`, zero-padded past the end (entries check their length).
        let raw = match hay[s..].first_chunk::<4>() {
            Some(w) => u32::from_le_bytes(*w),
            None => {
                let mut v = [0u8; 4];
                v[..hay.len() - s].copy_from_slice(&hay[s..]);
                u32::from_le_bytes(v)
            }
        };
        let folded = fold_u32(raw);
        for e in &self.entries[a..b] {
            let x = if e.nocase { folded } else { raw };
            let end = s + e.len as usize;
            if x & e.mask == e.value && end <= hay.len() && end >= min_end {
                sink.emit(e.id, end);
            }
        }
    }
}
