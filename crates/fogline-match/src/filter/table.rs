//! The strided table filter: no gathers, no input folding, half the lookups.
//!
//! Long patterns (at least 4 bytes) are looked up only at even positions `j`, in a table with one
//! byte per raw bigram (64 KiB): "some long pattern starts with this bigram" (a candidate start at `j`)
//! and "some long pattern has it at offset 1" (a candidate start at `j - 1`). Every start `s` is
//! covered once: at `j = s` when `s` is even, at `j = s + 1` when odd. This is the sampling idea
//! of Wu-Manber-style filters (and of Hyperscan's FDR "stride") applied to the V-PATCH filter 2;
//! candidates then pass the same hashed 4-byte filter 3. Short patterns keep a stride-1 bit
//! table (8 KiB), used only when the set has any. Folding is built into both tables (they are
//! indexed by raw bytes). Blocks start at even positions so that every shift is a constant: a
//! lookup is a 2-byte load, a table load, a shift and an or.
//!
//! Why next to the gather filters: on the benchmark machine (an AMD EPYC) the gathers were the
//! bottleneck of the AVX2 and AVX-512 filters, and scalar loads (several per cycle) do the same
//! lookups faster; this portable loop beats both there (see `results/`).

use super::{scalar, Cands, Stop};
use crate::fold::{fold_u32, read_u32};
use crate::tables::{f3_index, Tables};

const BLOCK: usize = 64;

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

/// The raw bigram `blk[d] | blk[d + 1] << 8`, as one 2-byte load.
#[inline(always)]
fn bigram(blk: &[u8; BLOCK + 4], d: usize) -> u16 {
    assert!(d + 2 <= blk.len());
    // SAFETY: `d + 2 <= blk.len()` (checked above; with constant `d` the check folds away).
    unsafe { blk.as_ptr().add(d).cast::<u16>().read_unaligned().to_le() }
}

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

/// Whether the CPU can run [`filter_x86`].
#[cfg(target_arch = "x86_64")]
pub(crate) fn has_x86_features() -> bool {
    std::arch::is_x86_feature_detected!("bmi1")
        && std::arch::is_x86_feature_detected!("bmi2")
        && std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("popcnt")
}

/// The same loop compiled with BMI2, whose `pext` extracts the start bits in one instruction,
/// and AVX2 for hashing many filter-3 windows at once.
///
/// # Safety
/// The CPU must support BMI1, BMI2, AVX2 and POPCNT.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi1,bmi2,avx2,popcnt")]
pub(crate) unsafe fn filter_x86(
    t: &Tables,
    hay: &[u8],
    from: usize,
    to: usize,
    flood_from: usize,
    c: &mut Cands,
) -> Stop {
    filter_with::<Pext>(t, hay, from, to, flood_from, c)
}

/// Candidates per block above which filter 3 hashes all windows with vectors.
const VECTOR_HASH_FROM: u32 = 5;

/// What the CPU-specific builds of the loop do differently.
trait Extract {
    /// The two start bits of eight entry bytes as sixteen adjacent bits.
    fn pairs(c: u64) -> u64;
    /// Filter-3 hashes of the folded 4-byte windows at offsets 0..64 of `blk`; false when
    /// this build has no vector version.
    fn hashes(blk: &[u8; BLOCK + 4], shift: u32, out: &mut [u32; BLOCK]) -> bool;
}

struct Portable;

impl Extract for Portable {
    #[inline(always)]
    fn pairs(c: u64) -> u64 {
        u64::from(SPREAD[gather_bits(c, 0) as usize] | SPREAD[gather_bits(c, 1) as usize] << 1)
    }

    #[inline(always)]
    fn hashes(_: &[u8; BLOCK + 4], _: u32, _: &mut [u32; BLOCK]) -> bool {
        false
    }
}

#[cfg(target_arch = "x86_64")]
struct Pext;

#[cfg(target_arch = "x86_64")]
impl Extract for Pext {
    #[inline(always)]
    fn pairs(c: u64) -> u64 {
        // SAFETY: only reached from `filter_x86`, which requires BMI2.
        unsafe { std::arch::x86_64::_pext_u64(c, 0x0303_0303_0303_0303) }
    }

    #[inline(always)]
    fn hashes(blk: &[u8; BLOCK + 4], shift: u32, out: &mut [u32; BLOCK]) -> bool {
        // SAFETY: only reached from `filter_x86`, which requires AVX2.
        unsafe { hashes_avx2(blk, shift, out) };
        true
    }
}

/// Lane `j` of a shuffled row holds bytes `j..j + 4` (`vpshufb` works per 128-bit half, so the
/// row is broadcast to both halves); the second table starts four bytes into the row.
#[cfg(target_arch = "x86_64")]
const WINDOWS: [[i8; 32]; 2] = {
    let mut w = [[0i8; 32]; 2];
    let mut v = 0;
    while v < 2 {
        let mut j = 0;
        while j < 32 {
            w[v][j] = (4 * v + j / 4 + j % 4) as i8;
            j += 1;
        }
        v += 1;
    }
    w
};

/// Folds and hashes the 64 four-byte windows of `blk` (same hash as `tables::f3_index`).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn hashes_avx2(blk: &[u8; BLOCK + 4], shift: u32, out: &mut [u32; BLOCK]) {
    use std::arch::x86_64::*;
    let p = blk.as_ptr();
    let cap_a = _mm_set1_epi8(b'A' as i8);
    let span = _mm_set1_epi8(25);
    let case = _mm_set1_epi8(0x20);
    let mul = _mm256_set1_epi32(crate::tables::F3_MUL as i32);
    let count = _mm_cvtsi32_si128(shift as i32);
    let win = [
        _mm256_loadu_si256(WINDOWS[0].as_ptr().cast()),
        _mm256_loadu_si256(WINDOWS[1].as_ptr().cast()),
    ];
    for g in 0..BLOCK / 8 {
        // Windows 8g..8g+8 need bytes 8g..8g+11; the last group loads from 4 bytes earlier so
        // that its 16 bytes stay inside `blk`.
        let (at, v) = if g + 1 < BLOCK / 8 {
            (8 * g, 0)
        } else {
            (8 * g - 4, 1)
        };
        let raw = _mm_loadu_si128(p.add(at).cast());
        let d = _mm_sub_epi8(raw, cap_a);
        let upper = _mm_cmpeq_epi8(_mm_min_epu8(d, span), d);
        let low = _mm_or_si128(raw, _mm_and_si128(upper, case));
        let w4 = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(low), win[v]);
        let h = _mm256_srl_epi32(_mm256_mullo_epi32(w4, mul), count);
        _mm256_storeu_si256(out.as_mut_ptr().add(8 * g).cast(), h);
    }
}

#[inline(always)]
fn filter_with<X: Extract>(
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
    if i & 1 == 1 && i < to {
        scalar::tail(t, hay, from, i, c);
        i += 1;
    }
    while i + BLOCK <= to {
        // Bigrams at offsets up to 66 read four bytes past the block.
        let Some(blk) = hay[i..].first_chunk::<{ BLOCK + 4 }>() else {
            break;
        };
        if i >= flood_from && scalar::is_run32(hay, i) {
            return Stop {
                stop: i,
                flood: true,
            };
        }
        block::<X>(t, pair, short, hay, blk, i, from, u64::MAX, c);
        i += BLOCK;
    }
    // The last positions: the same block code on a zero-padded copy. Padding can only add
    // candidates, which verification rejects (it checks bounds on the real input).
    while i < to {
        let mut blk = [0u8; BLOCK + 4];
        let end = hay.len().min(i + BLOCK + 4);
        blk[..end - i].copy_from_slice(&hay[i..end]);
        if i & 1 == 1 {
            scalar::tail(t, hay, from, i, c);
            i += 1;
            continue;
        }
        let count = (to - i).min(BLOCK);
        let keep = if count == BLOCK {
            u64::MAX
        } else {
            (1u64 << count) - 1
        };
        block::<X>(t, pair, short, hay, &blk, i, from, keep, c);
        i += count;
    }
    Stop {
        stop: to,
        flood: false,
    }
}

/// The table bytes of entries `0..34` (bigrams at even offsets), eight to a word.
///
/// Not inlined: inside the filter loop the compiler hoisted all 34 loads and spilled them;
/// alone, the few live values leave enough registers.
#[inline(never)]
fn pack(pair: &[u8; 65536], blk: &[u8; BLOCK + 4]) -> [u64; 5] {
    let at = |k: usize| u64::from(pair[usize::from(bigram(blk, 2 * k))]);
    let mut words = [0u64; 5];
    for (q, word) in words.iter_mut().take(4).enumerate() {
        for r in (0..8).rev() {
            *word = (*word << 8) | at(8 * q + r);
        }
    }
    words[4] = at(BLOCK / 2) | at(BLOCK / 2 + 1) << 8;
    words
}

/// The short-pattern bits of the 64 positions of `blk` (not inlined, as `pack`).
#[inline(never)]
fn short_mask(short: &[u64; 1024], blk: &[u8; BLOCK + 4]) -> u64 {
    let bit = |j: usize| {
        let w = usize::from(bigram(blk, j));
        (short[w >> 6] >> (w & 63)) & 1
    };
    let mut smask = 0u64;
    for q in 0..8 {
        let mut w = 0u64;
        for r in (0..8).rev() {
            w = (w << 1) | bit(8 * q + r);
        }
        smask |= w << (8 * q);
    }
    smask
}

/// Filters the 64 positions starting at `i` (only those whose bit is set in `keep`); `blk`
/// holds `hay[i..i + 68]`, zero-padded past the end of `hay`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block<X: Extract>(
    t: &Tables,
    pair: &[u8; 65536],
    short: &[u64; 1024],
    hay: &[u8],
    blk: &[u8; BLOCK + 4],
    i: usize,
    from: usize,
    keep: u64,
    c: &mut Cands,
) {
    // Blocks start at even positions, so the lookups are at offsets `d = 2k` (entry `k`). An
    // even start `s = 2k` needs offset 0 at entry `k` and offset 2 at entry `k + 1`; an odd start
    // `s = 2k - 1` needs offset 1 at entry `k` and offset 3 at entry `k + 1` (4-byte patterns:
    // `E1` at `k` and `H3` at `k + 1`). The table bytes are packed eight to a word so that the
    // tests for eight entries are a few word operations (SWAR), entry `k + 1` being the next byte.
    debug_assert_eq!(i & 1, 0);
    let words = pack(pair, blk);
    // Per entry byte: bit 1 = even start `2k`, bit 0 = odd start `2k - 1`.
    let starts = |w: u64, next: u64| {
        let even = (w >> 1) & (next >> 3);
        let odd = (w & (next >> 2)) | ((w >> 4) & (next >> 5));
        ((even & 0x0101_0101_0101_0101) << 1) | (odd & 0x0101_0101_0101_0101)
    };
    let mut above = 0u64;
    for q in 0..4 {
        let c = starts(words[q], (words[q] >> 8) | (words[q + 1] << 56));
        above |= X::pairs(c) << (16 * q);
    }
    let last = starts(words[4], words[4] >> 8) & 1;
    let mut lmask = (above >> 1) | (last << 63);
    lmask &= keep;
    let rel = (i - from) as u32;
    if t.has_short {
        let mut smask = short_mask(short, blk) & keep;
        while smask != 0 {
            c.push_short(rel + smask.trailing_zeros());
            smask &= smask - 1;
        }
    }
    // Filter 3. Text passes the bigram pairs often; then hashing all 64 windows at once with
    // vectors is cheaper than folding and hashing each candidate.
    if i + BLOCK + 3 > hay.len() {
        // Near the end some windows are not in `hay`.
        lmask &= (1u64 << (hay.len().saturating_sub(i + 3)).min(63)) - 1;
    }
    if lmask.count_ones() > VECTOR_HASH_FROM {
        // Initialised only here: zeroing it for every block cost a `memset` call per block.
        let mut hashes = [0u32; BLOCK];
        if X::hashes(blk, t.f3_shift, &mut hashes) {
            while lmask != 0 {
                let j = lmask.trailing_zeros();
                lmask &= lmask - 1;
                let h = hashes[j as usize] as usize;
                c.push_long_if(rel + j, t.filt3[h >> 5] & (1 << (h & 31)) != 0);
            }
            return;
        }
    }
    while lmask != 0 {
        let j = lmask.trailing_zeros();
        lmask &= lmask - 1;
        let h = f3_index(fold_u32(read_u32(hay, i + j as usize)), t.f3_shift) as usize;
        c.push_long_if(rel + j, t.filt3[h >> 5] & (1 << (h & 31)) != 0);
    }
}
