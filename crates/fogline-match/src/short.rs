//! Verification of 2- and 3-byte patterns: a direct index from the *raw* first two input bytes,
//! no hashing and no folding. Real signature sets are dominated by short patterns that match at
//! a large share of positions (`et2017_all` gives about one match per input byte), so this path
//! runs nearly everywhere and must not miss the cache.
//!
//! Layout: `present` has one bit per raw bigram that starts some pattern (a case-insensitive
//! pattern is entered under every case variant of its first two bytes); `rank[k]` counts the
//! bits in words `0..k`, so a present bigram's rank `r` indexes `at`. `at[r]` and `at[r + 1]`
//! bound the bigram's 2-byte pattern ids in `two` and its 3-byte entries in `three`. Keying by
//! the raw bigram means that a 2-byte pattern listed there matches without a comparison (a
//! count adds the list length) and a 3-byte one compares a single byte.

use crate::fold::fold;
use crate::sink::Sink;

/// A 3-byte pattern under one raw bigram: its third byte (folded when `nocase`).
#[derive(Debug, Clone, Copy)]
struct Third {
    id: u32,
    byte: u8,
    nocase: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Short {
    present: Box<[u64]>,
    rank: Box<[u32]>,
    /// Per present bigram, then one sentinel: starts in `two` and `three`.
    at: Box<[[u32; 2]]>,
    two: Box<[u32]>,
    three: Box<[Third]>,
}

/// The raw bytes that pattern byte `p` (folded when `nocase`) matches.
fn variants(p: u8, nocase: bool) -> impl Iterator<Item = u8> {
    let upper = p.to_ascii_uppercase();
    let both = nocase && upper != p;
    std::iter::once(p).chain(both.then_some(upper))
}

impl Short {
    /// `patterns`: `(id, stored bytes (folded when nocase), nocase)`, each 2 or 3 bytes long.
    pub(crate) fn build(patterns: &[(u32, &[u8], bool)]) -> Short {
        // (raw bigram, third byte or none, id, nocase), sorted so that each bigram's 2-byte
        // patterns come before its 3-byte ones.
        let mut keyed: Vec<(usize, Option<u8>, u32, bool)> = Vec::new();
        for &(id, p, nocase) in patterns {
            for a in variants(p[0], nocase) {
                for b in variants(p[1], nocase) {
                    let w = usize::from(a) | usize::from(b) << 8;
                    keyed.push((w, p.get(2).copied(), id, nocase));
                }
            }
        }
        keyed.sort_unstable();
        let mut present = vec![0u64; 65536 / 64];
        let (mut at, mut two, mut three) = (Vec::new(), Vec::new(), Vec::new());
        for &(w, third, id, nocase) in &keyed {
            if present[w >> 6] & (1 << (w & 63)) == 0 {
                present[w >> 6] |= 1 << (w & 63);
                at.push([two.len() as u32, three.len() as u32]);
            }
            match third {
                None => two.push(id),
                Some(byte) => three.push(Third { id, byte, nocase }),
            }
        }
        at.push([two.len() as u32, three.len() as u32]);
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
            two: two.into_boxed_slice(),
            three: three.into_boxed_slice(),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        use std::mem::size_of_val;
        size_of_val(&*self.present)
            + size_of_val(&*self.rank)
            + size_of_val(&*self.at)
            + size_of_val(&*self.two)
            + size_of_val(&*self.three)
    }

    /// Reports every 2- or 3-byte pattern starting at `s` (and ending at or after `min_end`).
    #[inline(always)]
    pub(crate) fn verify<S: Sink>(&self, hay: &[u8], s: usize, min_end: usize, sink: &mut S) {
        let Some(&[b0, b1]) = hay.get(s..s + 2) else {
            return;
        };
        let w = usize::from(b0) | usize::from(b1) << 8;
        let bits = self.present[w >> 6];
        if bits & (1 << (w & 63)) == 0 {
            return;
        }
        let r = (self.rank[w >> 6] + (bits & ((1 << (w & 63)) - 1)).count_ones()) as usize;
        let ([a2, a3], [z2, z3]) = (self.at[r], self.at[r + 1]);
        if s + 2 >= min_end {
            sink.emit_all(&self.two[a2 as usize..z2 as usize], s + 2);
        }
        let Some(&x) = hay.get(s + 2) else {
            return;
        };
        if s + 3 < min_end {
            return;
        }
        let folded = fold(x);
        for e in &self.three[a3 as usize..z3 as usize] {
            let v = if e.nocase { folded } else { x };
            sink.emit_if(e.id, s + 3, v == e.byte);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::Callback;

    #[test]
    fn reports_exactly_the_naive_matches_at_every_start_and_bound() {
        let alphabet = [b'a', b'A', b'z', b'Z', b'1', 0, 0xc1, 0xe1];
        let stored: Vec<(u32, Vec<u8>, bool)> = vec![
            (0, b"az".to_vec(), true),
            (1, b"aZ".to_vec(), false),
            (2, b"a1a".to_vec(), true),
            (3, b"A1a".to_vec(), false),
            (4, b"az".to_vec(), true),
            (5, vec![0, 0], false),
            (6, vec![0xc1, b'a', b'z'], true),
            (7, b"za\xe1".to_vec(), false),
        ];
        let list: Vec<(u32, &[u8], bool)> =
            stored.iter().map(|(i, p, n)| (*i, &p[..], *n)).collect();
        let short = Short::build(&list);
        let same = |p: &[u8], nocase: bool, h: &[u8]| {
            p.len() == h.len()
                && p.iter()
                    .zip(h)
                    .all(|(&a, &b)| a == if nocase { fold(b) } else { b })
        };
        for code in 0..alphabet.len().pow(3) {
            let hay: Vec<u8> = (0..3)
                .map(|k| alphabet[code / alphabet.len().pow(k) % alphabet.len()])
                .collect();
            for len in 0..=3 {
                let hay = &hay[..len];
                for s in 0..len {
                    for min_end in [0, s + 3] {
                        let mut got = Vec::new();
                        let mut sink = Callback {
                            base: 0,
                            f: |m: crate::Match| got.push((m.pattern, m.end)),
                        };
                        short.verify(hay, s, min_end, &mut sink);
                        got.sort_unstable();
                        let mut want: Vec<(u32, usize)> = stored
                            .iter()
                            .filter(|(_, p, n)| {
                                s + p.len() <= len
                                    && s + p.len() >= min_end
                                    && same(p, *n, &hay[s..s + p.len()])
                            })
                            .map(|(i, p, _)| (*i, s + p.len()))
                            .collect();
                        want.sort_unstable();
                        assert_eq!(got, want, "{hay:?} at {s}, min_end {min_end}");
                    }
                }
            }
        }
    }
}
