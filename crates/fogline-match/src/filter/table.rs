//! The strided table filter: no gathers, no input folding, half the lookups.
//!
//! Long patterns (at least 4 bytes) are looked up only at even positions `j`, in a table with one
//! byte per raw bigram (64 KiB) saying at which offsets (0..4) some long pattern has the bigram.
//! A start `s` needs two of them: offsets 0 and 2 (entries `j = s`, `j + 2`) when `s` is even,
//! 1 and 3 (`j = s + 1`, `j + 3`) when odd. This is the sampling idea of Wu-Manber-style filters
//! (and of Hyperscan's FDR "stride") applied to the V-PATCH filter 2; candidates then pass the
//! same hashed 4-byte filter 3. Short patterns keep a stride-1 bit table (8 KiB), used only when
//! the set has any. Folding is built into both tables (they are indexed by raw bytes).
//!
//! A round runs in phases, so that no phase waits on another's data:
//! 1. the flood test at each block start (a block of 32 equal bytes ends the round there);
//! 2. the lookups: the table byte of every even position of the round into `tab` (a 2-byte
//!    load, a table load and a byte store each, nothing else; entry `k` is the bigram at
//!    offset `2k` of the round);
//! 3. per block of 64 positions, the pair tests on 34 entries of `tab` at once (SWAR words, or
//!    vectors in the x86 build), the short-pattern bits, and filter 3 on the positions left.
//!
//! Why next to the gather filters: on the benchmark machine (an AMD EPYC) the gathers were the
//! bottleneck of the AVX2 and AVX-512 filters, and scalar loads (several per cycle) do the same
//! lookups faster; this loop beats both there (see `results/`).

use std::mem::MaybeUninit;

use super::{scalar, Cands, Stop, CHUNK};
use crate::fold::{fold_u32, read_u32};
use crate::tables::{f3_index, Tables, S};

pub(crate) const BLOCK: usize = 64;
/// Table entries one block's pair tests read: bigrams at offsets `0, 2, ..., 66`.
pub(crate) const ENTRIES: usize = BLOCK / 2 + 2;
/// Entries of a whole round.
const ROUND_ENTRIES: usize = CHUNK / 2 + 2;

/// Bit `k` of the result is bit `bit` of byte `k` of `x`.
#[inline(always)]
fn gather_bits(x: u64, bit: u32) -> u64 {
    (((x >> bit) & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// `SPREAD[b]` has bit `k` of `b` at bit `2k`.
const SPREAD: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut b = 0;
    while b < 256 {
        let mut k = 0;
        while k < 8 {
            t[b] |= (((b >> k) & 1) as u16) << (2 * k);
            k += 1;
        }
        b += 1;
    }
    t
};

/// Filters `from..to` (portable build).
pub(crate) fn filter(
    t: &Tables,
    hay: &[u8],
    from: usize,
    to: usize,
    flood_from: usize,
    c: &mut Cands,
) -> Stop {
    filter_with::<Portable>(t, hay, from, to, flood_from, c)
}

/// Candidates per block above which filter 3 hashes all windows with vectors.
const VECTOR_HASH_FROM: u32 = 5;

/// What the CPU-specific builds of the loop do differently.
pub(crate) trait Extract {
    /// Bit `s` is set when start `s` of the block passes the pair test; `tab` holds the
    /// block's entries `0..34`.
    fn starts(tab: &[u8; ENTRIES]) -> u64;
    /// Bit `s` is set when position `s` of the block may start a short pattern: bit `S` of
    /// entry `s / 2` of `even` (`s` even) or of `odd` (`s` odd).
    fn shorts(even: &[u8; ENTRIES], odd: &[u8; BLOCK / 2]) -> u64;
    /// Pushes `rel + j` for every bit `j` of `mask` as short (or long) candidates, in order.
    fn push(c: &mut Cands, rel: u32, mask: u64, long: bool);
    /// Filter-3 hashes of the folded 4-byte windows at offsets 0..64 of `blk`; false when
    /// this build has no vector version.
    fn hashes(blk: &[u8; BLOCK + 4], shift: u32, out: &mut [u32; BLOCK]) -> bool;
    /// Whether `hay[i..i + 32]` is one repeated byte (`i + 32 <= hay.len()`).
    fn run32(hay: &[u8], i: usize) -> bool;
}

/// The portable build: SWAR pair tests.
pub(crate) struct Portable;

impl Extract for Portable {
    #[inline(always)]
    fn starts(tab: &[u8; ENTRIES]) -> u64 {
        // Eight entries to a word; entry `k + 1` is the next byte. Per entry byte: bit 1 =
        // even start `2k`, bit 0 = odd start `2k - 1`.
        let word = |q: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&tab[8 * q..8 * q + 8]);
            u64::from_le_bytes(w)
        };
        let words = [
            word(0),
            word(1),
            word(2),
            word(3),
            u64::from(tab[32]) | u64::from(tab[33]) << 8,
        ];
        let starts = |w: u64, next: u64| {
            let even = (w >> 1) & (next >> 3);
            let odd = (w & (next >> 2)) | ((w >> 4) & (next >> 5));
            ((even & 0x0101_0101_0101_0101) << 1) | (odd & 0x0101_0101_0101_0101)
        };
        let pairs = |c: u64| {
            u64::from(SPREAD[gather_bits(c, 0) as usize] | SPREAD[gather_bits(c, 1) as usize] << 1)
        };
        let mut above = 0u64;
        for q in 0..4 {
            let c = starts(words[q], (words[q] >> 8) | (words[q + 1] << 56));
            above |= pairs(c) << (16 * q);
        }
        let last = starts(words[4], words[4] >> 8) & 1;
        (above >> 1) | (last << 63)
    }

    #[inline(always)]
    fn shorts(even: &[u8; ENTRIES], odd: &[u8; BLOCK / 2]) -> u64 {
        let mut m = 0u64;
        for (k, (&e, &o)) in even.iter().zip(odd).enumerate() {
            m |= u64::from(e & S != 0) << (2 * k) | u64::from(o & S != 0) << (2 * k + 1);
        }
        m
    }

    #[inline(always)]
    fn push(c: &mut Cands, rel: u32, mut mask: u64, long: bool) {
        while mask != 0 {
            if long {
                c.push_long(rel + mask.trailing_zeros());
            } else {
                c.push_short(rel + mask.trailing_zeros());
            }
            mask &= mask - 1;
        }
    }

    #[inline(always)]
    fn hashes(_: &[u8; BLOCK + 4], _: u32, _: &mut [u32; BLOCK]) -> bool {
        false
    }

    #[inline(always)]
    fn run32(hay: &[u8], i: usize) -> bool {
        scalar::is_run32(hay, i)
    }
}

/// The table byte of the bigram at `hay[at..at + 2]`, zero bytes past the end.
#[inline(always)]
fn padded_entry(pair: &[u8; 65536], hay: &[u8], at: usize) -> u8 {
    let a = hay.get(at).copied().unwrap_or(0);
    let b = hay.get(at + 1).copied().unwrap_or(0);
    pair[usize::from(u16::from_le_bytes([a, b]))]
}

#[inline(always)]
pub(crate) fn filter_with<X: Extract>(
    t: &Tables,
    hay: &[u8],
    from: usize,
    to: usize,
    flood_from: usize,
    c: &mut Cands,
) -> Stop {
    let Ok(pair) = <&[u8; 65536]>::try_from(&*t.pair2) else {
        return scalar::filter(t, hay, from, to, flood_from, c);
    };
    // Blocks start at even positions, so every shift in the pair tests is a constant.
    let mut i0 = from;
    if i0 & 1 == 1 && i0 < to {
        scalar::tail(t, hay, from, i0, c);
        i0 += 1;
    }
    let mut stop = Stop {
        stop: to,
        flood: false,
    };
    if i0 >= to {
        return stop;
    }
    // Phase 1: the round ends at the first full block that starts a flood.
    let mut blocks = (to - i0).div_ceil(BLOCK);
    let full = (to - i0) / BLOCK;
    if let Some(b) = (0..full).find(|&b| {
        let i = i0 + b * BLOCK;
        i + BLOCK + 4 <= hay.len() && i >= flood_from && X::run32(hay, i)
    }) {
        blocks = b;
        stop = Stop {
            stop: i0 + b * BLOCK,
            flood: true,
        };
    }
    // Phase 2: every lookup of the round. Entries whose bigram reaches past the input use
    // zero bytes there; padding can only add candidates, which verification rejects (it checks
    // bounds on the real input).
    let entries = BLOCK / 2 * blocks + 2;
    let mut tab = [MaybeUninit::<u8>::uninit(); ROUND_ENTRIES];
    let tab = lookup_all(pair, hay, i0, &mut tab[..entries]);
    // With short patterns the odd positions are looked up too (their bit `S`).
    let mut odd = [MaybeUninit::<u8>::uninit(); CHUNK / 2];
    let odd = if t.has_short {
        lookup_all(pair, hay, i0 + 1, &mut odd[..BLOCK / 2 * blocks])
    } else {
        &[]
    };
    // Phase 3: the pair tests of every block, then filter 3 and the short patterns.
    let keep_of = |b: usize| {
        let count = (stop.stop - i0 - b * BLOCK).min(BLOCK);
        if count == BLOCK {
            u64::MAX
        } else {
            (1u64 << count) - 1
        }
    };
    if t.has_short {
        // Text with short patterns: every block has work.
        for b in 0..blocks {
            let Some(e) = tab[b * BLOCK / 2..].first_chunk::<ENTRIES>() else {
                break;
            };
            let Some(o) = odd[b * BLOCK / 2..].first_chunk::<{ BLOCK / 2 }>() else {
                break;
            };
            let keep = keep_of(b);
            let i = i0 + b * BLOCK;
            let smask = X::shorts(e, o) & keep;
            block::<X>(t, hay, X::starts(e) & keep, smask, i, from, c);
        }
        return stop;
    }
    // Only long patterns: the blocks with candidates are listed first, without a branch per
    // block (on random input about a third of the blocks have one, unpredictably; a branch on
    // each cost a misprediction per such block).
    let mut masks = [0u64; CHUNK / BLOCK];
    let mut at = [0u32; CHUNK / BLOCK];
    let mut n = 0;
    for b in 0..blocks.min(CHUNK / BLOCK) {
        let Some(e) = tab[b * BLOCK / 2..].first_chunk::<ENTRIES>() else {
            break;
        };
        masks[n] = X::starts(e) & keep_of(b);
        at[n] = b as u32;
        n += usize::from(masks[n] != 0);
    }
    for (&m, &b) in masks[..n].iter().zip(&at[..n]) {
        block::<X>(t, hay, m, 0, i0 + b as usize * BLOCK, from, c);
    }
    stop
}

/// Fills `out[k]` with the table byte of the bigram at `hay[at + 2k..]` and returns it as
/// initialised. Bigrams reaching past the input use zero bytes there; padding can only add
/// candidates, which verification rejects (it checks bounds on the real input).
#[inline(always)]
fn lookup_all<'a>(
    pair: &[u8; 65536],
    hay: &[u8],
    at: usize,
    out: &'a mut [MaybeUninit<u8>],
) -> &'a [u8] {
    let direct = (hay.len().saturating_sub(at) / 2).min(out.len());
    lookups(pair, &hay[at..at + 2 * direct], &mut out[..direct]);
    for (k, o) in out.iter_mut().enumerate().skip(direct) {
        *o = MaybeUninit::new(padded_entry(pair, hay, at + 2 * k));
    }
    // SAFETY: every element of `out` was written just above.
    unsafe { std::slice::from_raw_parts(out.as_ptr().cast(), out.len()) }
}

/// `out[k]` = the table byte of the bigram at `src[2k..2k + 2]`; `src.len() == 2 * out.len()`.
///
/// The stores are volatile so that the compiler keeps one plain byte store per lookup: left
/// alone, it assembled the bytes in a vector register with one insert instruction each, which
/// cost more than the lookups.
#[inline(always)]
fn lookups(pair: &[u8; 65536], src: &[u8], out: &mut [MaybeUninit<u8>]) {
    assert_eq!(src.len(), 2 * out.len());
    let (s, o) = (src.as_ptr(), out.as_mut_ptr());
    for k in 0..out.len() {
        // SAFETY: `2k + 2 <= src.len()` and `k < out.len()` (asserted above).
        unsafe {
            let w = s.add(2 * k).cast::<u16>().read_unaligned().to_le();
            o.add(k)
                .write_volatile(MaybeUninit::new(pair[usize::from(w)]));
        }
    }
}

/// Pushes the candidates of the 64 positions starting at `i`: those of `smask` (short
/// patterns) and those of `lmask` (the pair test's) that pass filter 3.
#[inline(always)]
fn block<X: Extract>(
    t: &Tables,
    hay: &[u8],
    mut lmask: u64,
    smask: u64,
    i: usize,
    from: usize,
    c: &mut Cands,
) {
    debug_assert_eq!(i & 1, 0);
    let rel = (i - from) as u32;
    if smask != 0 {
        X::push(c, rel, smask, false);
    }
    if i + BLOCK + 3 > hay.len() {
        // Near the end some windows are not in `hay`.
        lmask &= (1u64 << (hay.len().saturating_sub(i + 3)).min(63)) - 1;
    }
    if lmask.count_ones() <= VECTOR_HASH_FROM {
        filter3_each(t, hay, lmask, i, rel, c);
        return;
    }
    let mut pad = [0u8; BLOCK + 4];
    let blk = match hay[i..].first_chunk::<{ BLOCK + 4 }>() {
        Some(b) => b,
        None => {
            let n = hay.len() - i;
            pad[..n].copy_from_slice(&hay[i..]);
            &pad
        }
    };
    // Filter 3. Text passes the bigram pairs often; then hashing all 64 windows at once with
    // vectors is cheaper than folding and hashing each candidate.
    // Initialised only here: zeroing it for every block cost a `memset` call per block.
    let mut hashes = [0u32; BLOCK];
    if X::hashes(blk, t.f3_shift, &mut hashes) {
        // The passing positions as a mask first: the filter-3 loads are then independent of
        // each other instead of chained through the candidate count.
        let mut pass = 0u64;
        while lmask != 0 {
            let j = lmask.trailing_zeros();
            lmask &= lmask - 1;
            let h = hashes[j as usize] as usize;
            pass |= u64::from((t.filt3[h >> 5] >> (h & 31)) & 1) << j;
        }
        X::push(c, rel, pass, true);
        return;
    }
    filter3_each(t, hay, lmask, i, rel, c);
}

/// Filter 3 on each position of `lmask`, hashing one window at a time.
#[inline(always)]
fn filter3_each(t: &Tables, hay: &[u8], mut lmask: u64, i: usize, rel: u32, c: &mut Cands) {
    while lmask != 0 {
        let j = lmask.trailing_zeros();
        lmask &= lmask - 1;
        let h = f3_index(fold_u32(read_u32(hay, i + j as usize)), t.f3_shift) as usize;
        c.push_long_if(rel + j, t.filt3[h >> 5] & (1 << (h & 31)) != 0);
    }
}
