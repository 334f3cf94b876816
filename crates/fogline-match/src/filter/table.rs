//! The strided table filter: no gathers, no input folding, half the lookups.
//!
//! Long patterns (at least 4 bytes) are looked up only at even positions `j`, in a table with one
//! byte per raw bigram (64 KiB): "some long pattern starts with this bigram" (a candidate start at `j`)
//! and "some long pattern has it at offset 1" (a candidate start at `j - 1`). Every start `s` is
//! covered once: at `j = s` when `s` is even, at `j = s + 1` when odd. This is the sampling idea
//! of Wu-Manber-style filters (and of Hyperscan's FDR "stride") applied to the V-PATCH filter 2;
//! candidates then pass the same hashed 4-byte filter 3. Short patterns keep a stride-1 bit
//! table (8 KiB), used only when the set has any. Folding is built into both tables (they are
//! indexed by raw bytes). The 32 table bytes of a block are turned into masks with
//! multiply-based bit gathering, so the per-position work is two loads and a store.
//!
//! Why next to the gather filters: on AMD Zen 4 (the benchmark machine) `vpgatherdd` is
//! microcoded and slower than the scalar loads it replaces, which issue three per cycle; this
//! portable loop beats the AVX2 and AVX-512 gathers there (see `results/`).

use super::{scalar, Cands, Stop};
use crate::fold::{fold_u32, read_u32, read_u64};
use crate::tables::{f3_index, Tables};

const BLOCK: usize = 64;

/// Bit `k` of the result is bit `bit` of byte `k` of `x`.
#[inline(always)]
fn gather_bits(x: u64, bit: u32) -> u64 {
    (((x >> bit) & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// Moves bit `k` (k < 32) of `x` to bit `2k`.
#[inline(always)]
fn spread(x: u64) -> u64 {
    let x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    let x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    let x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    let x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

pub(crate) fn filter(
    t: &Tables,
    hay: &[u8],
    from: usize,
    to: usize,
    flood_from: usize,
    c: &mut Cands,
) -> Stop {
    let (Ok(pair), Ok(short)) = (
        <&[u8; 65536]>::try_from(&*t.pair2),
        <&[u64; 1024]>::try_from(&*t.short1),
    ) else {
        return scalar::filter(t, hay, from, to, flood_from, c);
    };
    let mut i = from;
    while i + BLOCK <= to {
        // Bigrams at offsets up to 65 read three bytes past the block.
        let Some(blk) = hay[i..].first_chunk::<{ BLOCK + 3 }>() else {
            break;
        };
        if i >= flood_from && scalar::is_run32(hay, i) {
            return Stop {
                stop: i,
                flood: true,
            };
        }
        block(t, pair, short, hay, blk, i, from, u64::MAX, c);
        i += BLOCK;
    }
    // The last positions: the same block code on a zero-padded copy. Padding can only add
    // candidates, which verification rejects (it checks bounds on the real input).
    while i < to {
        let mut blk = [0u8; BLOCK + 3];
        let end = hay.len().min(i + BLOCK + 3);
        blk[..end - i].copy_from_slice(&hay[i..end]);
        let count = (to - i).min(BLOCK);
        let keep = if count == BLOCK {
            u64::MAX
        } else {
            (1u64 << count) - 1
        };
        block(t, pair, short, hay, &blk, i, from, keep, c);
        i += count;
    }
    Stop {
        stop: to,
        flood: false,
    }
}

/// Filters the 64 positions starting at `i` (only those whose bit is set in `keep`); `blk`
/// holds `hay[i..i + 67]`, zero-padded past the end of `hay`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block(
    t: &Tables,
    pair: &[u8; 65536],
    short: &[u64; 1024],
    hay: &[u8],
    blk: &[u8; BLOCK + 3],
    i: usize,
    from: usize,
    keep: u64,
    c: &mut Cands,
) {
    // Entry `k` is the table byte of the even absolute position at offset `p0 + 2k`: one
    // 8-byte load yields the four bigrams at offsets +0, +2, +4, +6.
    let p0 = i & 1;
    let (mut a, mut b) = (0u64, 0u64);
    for q in 0..4 {
        let mut v = 0u64;
        for h in 0..2 {
            let x = read_u64(blk, p0 + 16 * q + 8 * h);
            for r in 0..4 {
                let w = ((x >> (16 * r)) & 0xffff) as usize;
                v |= u64::from(pair[w]) << (8 * (4 * h + r));
            }
        }
        a |= gather_bits(v, 0) << (8 * q);
        b |= gather_bits(v, 1) << (8 * q);
    }
    // Starts: `d` for bit 0, `d - 1` for bit 1; entry 32 (only when p0 == 0) covers i + 63.
    let mut lmask = (spread(a) << p0) | ((spread(b) << p0) >> 1);
    if p0 == 0 {
        let w = usize::from(blk[BLOCK]) | usize::from(blk[BLOCK + 1]) << 8;
        lmask |= u64::from(pair[w] >> 1) << 63;
    }
    lmask &= keep;
    let rel = (i - from) as u32;
    if t.has_short {
        let mut smask = 0u64;
        for j in 0..BLOCK {
            let w = usize::from(blk[j]) | usize::from(blk[j + 1]) << 8;
            smask |= ((short[w >> 6] >> (w & 63)) & 1) << j;
        }
        smask &= keep;
        while smask != 0 {
            c.push_short(rel + smask.trailing_zeros());
            smask &= smask - 1;
        }
    }
    while lmask != 0 {
        let j = lmask.trailing_zeros();
        lmask &= lmask - 1;
        let s = i + j as usize;
        if s + 4 <= hay.len() {
            let h = f3_index(fold_u32(read_u32(hay, s)), t.f3_shift) as usize;
            if t.filt3[h >> 5] & (1 << (h & 31)) != 0 {
                c.push_long(rel + j);
            }
        }
    }
}
