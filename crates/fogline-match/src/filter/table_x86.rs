//! The x86-64 build of the table filter (`table`): the same phases compiled with BMI2 and AVX2.
//!
//! - Pair tests: the 34 table bytes of a block are three overlapping 32-byte loads (entries
//!   `k`, `k + 1`, `k + 2` side by side), a few shifts and ands give "even start `2k`" and "odd
//!   start `2k + 1`" in the top bit of each byte, `vpmovmskb` takes them out and `pdep`
//!   interleaves them into the block's 64 start bits. This replaces about sixty word
//!   operations of the SWAR version.
//! - Filter 3 on text: the 64 windows are folded and hashed at once (the window shuffle of
//!   V-PATCH Figure 2.2); only the bit tests stay scalar.
//! - Short-pattern bits: bit `S` of the even and odd entries, moved to the top bit of each
//!   byte, taken out and interleaved the same way.
//! - Flood test: one 32-byte compare.

use std::arch::x86_64::*;

use super::table::{filter_with, Extract, BLOCK, ENTRIES};
use super::{Cands, Stop};
use crate::tables::Tables;

/// Whether the CPU can run [`filter_x86`].
pub(crate) fn has_x86_features() -> bool {
    std::arch::is_x86_feature_detected!("bmi1")
        && std::arch::is_x86_feature_detected!("bmi2")
        && std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("popcnt")
}

/// The table filter compiled with BMI1/2, POPCNT and AVX2.
///
/// # Safety
/// The CPU must support BMI1, BMI2, AVX2 and POPCNT.
#[target_feature(enable = "bmi1,bmi2,avx2,popcnt")]
pub(crate) unsafe fn filter_x86(
    t: &Tables,
    hay: &[u8],
    from: usize,
    to: usize,
    flood_from: usize,
    c: &mut Cands,
) -> Stop {
    filter_with::<Avx2>(t, hay, from, to, flood_from, c)
}

struct Avx2;

impl Extract for Avx2 {
    #[inline(always)]
    fn starts(tab: &[u8; ENTRIES]) -> u64 {
        // SAFETY: only reached from `filter_x86`, which requires AVX2 and BMI2.
        unsafe { starts_avx2(tab) }
    }

    #[inline(always)]
    fn shorts(even: &[u8; ENTRIES], odd: &[u8; BLOCK / 2]) -> u64 {
        // SAFETY: only reached from `filter_x86`, which requires AVX2 and BMI2; both arrays
        // have at least 32 bytes.
        unsafe {
            let bit = |p: *const u8| {
                let v = _mm256_loadu_si256(p.cast());
                u64::from(_mm256_movemask_epi8(_mm256_slli_epi16::<1>(v)) as u32)
            };
            _pdep_u64(bit(even.as_ptr()), 0x5555_5555_5555_5555)
                | _pdep_u64(bit(odd.as_ptr()), 0xaaaa_aaaa_aaaa_aaaa)
        }
    }

    #[inline(always)]
    fn push(c: &mut Cands, rel: u32, mask: u64, long: bool) {
        // SAFETY: only reached from `filter_x86`, which requires AVX2 and POPCNT.
        unsafe { push_mask(c, rel, mask, long) }
    }

    #[inline(always)]
    fn hashes(blk: &[u8; BLOCK + 4], shift: u32, out: &mut [u32; BLOCK]) -> bool {
        // SAFETY: only reached from `filter_x86`, which requires AVX2.
        unsafe { hashes_avx2(blk, shift, out) };
        true
    }

    #[inline(always)]
    fn run32(hay: &[u8], i: usize) -> bool {
        let Some(w) = hay[i..].first_chunk::<32>() else {
            return false;
        };
        // SAFETY: only reached from `filter_x86`, which requires AVX2; `w` has 32 bytes.
        unsafe {
            let v = _mm256_loadu_si256(w.as_ptr().cast());
            let first = _mm256_set1_epi8(w[0] as i8);
            _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, first)) == -1
        }
    }
}

/// The pair tests of one block (see `tables` for the bits): even start `2k` needs `A0` at
/// entry `k` and `C2` at `k + 1`; odd start `2k + 1` needs `B1` at `k + 1` and `D3` at `k + 2`,
/// or `E1` and `H3` there (4-byte patterns). The shifts are on 16-bit lanes; a byte only ever
/// reads its own bits 0-5 after them, which no neighbour reaches.
///
/// # Safety
/// The CPU must support AVX2 and BMI2.
#[inline]
#[target_feature(enable = "avx2,bmi2")]
unsafe fn starts_avx2(tab: &[u8; ENTRIES]) -> u64 {
    const { assert!(ENTRIES >= 34) };
    let p = tab.as_ptr();
    let v = _mm256_loadu_si256(p.cast());
    let n = _mm256_loadu_si256(p.add(1).cast());
    let n2 = _mm256_loadu_si256(p.add(2).cast());
    // Bit 1: A0(k) & C2(k + 1).
    let even = _mm256_and_si256(v, _mm256_srli_epi16::<2>(n));
    // Bit 0: B1(k + 1) & D3(k + 2); bit 4: E1(k + 1) & H3(k + 2), moved to bit 0.
    let bd = _mm256_and_si256(n, _mm256_srli_epi16::<2>(n2));
    let eh = _mm256_and_si256(n, _mm256_srli_epi16::<1>(n2));
    let odd = _mm256_or_si256(bd, _mm256_srli_epi16::<4>(eh));
    let e = _mm256_movemask_epi8(_mm256_slli_epi16::<6>(even)) as u32;
    let o = _mm256_movemask_epi8(_mm256_slli_epi16::<7>(odd)) as u32;
    _pdep_u64(u64::from(e), 0x5555_5555_5555_5555) | _pdep_u64(u64::from(o), 0xaaaa_aaaa_aaaa_aaaa)
}

/// `SET_BITS[b]`: the positions of the set bits of `b`, in increasing order, then zeros.
const SET_BITS: [[u8; 8]; 256] = {
    let mut t = [[0u8; 8]; 256];
    let mut b = 0;
    while b < 256 {
        let (mut k, mut n) = (0, 0);
        while k < 8 {
            if b >> k & 1 == 1 {
                t[b][n] = k as u8;
                n += 1;
            }
            k += 1;
        }
        b += 1;
    }
    t
};

/// Appends `rel + j` for every set bit `j` of `mask` to the short (or long) candidates: per byte of the
/// mask, one table row widened to eight lanes and stored whole (the slots past the set bits are
/// overwritten later or never read), the count advanced by the byte's popcount. No branch per
/// bit: in text a third of the positions are short candidates and the bit loop mispredicted its
/// exit at every block.
///
/// # Safety
/// The CPU must support AVX2 and POPCNT. Inlined into `filter_x86` (which enables them) rather
/// than compiled with them itself: as a function of its own it was not inlined, and the call
/// cost 5% on text.
#[inline(always)]
unsafe fn push_mask(c: &mut Cands, rel: u32, mask: u64, long: bool) {
    // The last store starts at most 56 slots in and writes 8.
    let ps = if long {
        c.spare_long()
    } else {
        c.spare_short()
    };
    let mut n = 0usize;
    for q in 0..8 {
        let byte = (mask >> (8 * q)) as u8;
        let row = _mm_loadl_epi64(SET_BITS[usize::from(byte)].as_ptr().cast());
        let base = _mm256_set1_epi32((rel + 8 * q) as i32);
        let lanes = _mm256_add_epi32(_mm256_cvtepu8_epi32(row), base);
        _mm256_storeu_si256(ps.add(n).cast(), lanes);
        n += byte.count_ones() as usize;
    }
    if long {
        c.grow(0, n);
    } else {
        c.grow(n, 0);
    }
}

/// Lane `j` of a shuffled row holds bytes `j..j + 4` (`vpshufb` works per 128-bit half, so the
/// row is broadcast to both halves); the second table starts four bytes into the row.
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
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn hashes_avx2(blk: &[u8; BLOCK + 4], shift: u32, out: &mut [u32; BLOCK]) {
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

#[cfg(test)]
mod tests {
    use super::super::table::{self, Portable};
    use super::*;
    use crate::filter::CHUNK;
    use crate::tables::Source;

    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    #[test]
    fn vector_pair_and_short_tests_equal_the_portable_ones() {
        if !has_x86_features() {
            return;
        }
        let mut seed = 0x1234_5678_9abc_def1;
        for round in 0..20_000 {
            let mut tab = [0u8; ENTRIES];
            // Sparse and dense bit patterns alike.
            let density = round % 4;
            for e in tab.iter_mut() {
                let mut x = rng(&mut seed) as u8 & 63;
                for _ in 0..density {
                    x &= rng(&mut seed) as u8;
                }
                *e = x;
            }
            assert_eq!(Avx2::starts(&tab), Portable::starts(&tab), "{tab:?}");
            let mut odd = [0u8; BLOCK / 2];
            odd.iter_mut().for_each(|o| *o = rng(&mut seed) as u8 & 127);
            assert_eq!(Avx2::shorts(&tab, &odd), Portable::shorts(&tab, &odd));
        }
    }

    /// Candidates of one round: the stop, short and long positions.
    fn round(
        x86: bool,
        t: &Tables,
        hay: &[u8],
        from: usize,
        to: usize,
        flood_from: usize,
    ) -> (usize, bool, Vec<u32>, Vec<u32>) {
        let mut c = Cands::new();
        let stop = if x86 {
            // SAFETY: the caller checked the CPU features.
            unsafe { filter_x86(t, hay, from, to, flood_from, &mut c) }
        } else {
            table::filter(t, hay, from, to, flood_from, &mut c)
        };
        (stop.stop, stop.flood, c.short().to_vec(), c.long().to_vec())
    }

    #[test]
    fn x86_build_writes_the_candidates_of_the_portable_build() {
        if !has_x86_features() {
            return;
        }
        let mut seed = 0x0dd_ba11_cafe_f00d;
        let alphabet = b"aAbBcC\0\xff \r\n";
        let pick = |seed: &mut u64| alphabet[(rng(seed) % alphabet.len() as u64) as usize];
        for case in 0..60 {
            let mut src = Vec::new();
            for id in 0..(5 + case % 40) {
                let len = [2, 3, 4, 4, 5, 6, 9][(rng(&mut seed) % 7) as usize];
                let bytes = (0..len).map(|_| pick(&mut seed)).collect();
                src.push(Source {
                    id,
                    bytes,
                    nocase: rng(&mut seed) & 1 == 0,
                });
            }
            if case % 3 == 0 {
                // Only long patterns: the listed-blocks path.
                src.retain(|s| s.bytes.len() >= 4);
            }
            let t = Tables::build(&src);
            let len = (rng(&mut seed) % 2600) as usize;
            let mut hay: Vec<u8> = (0..len).map(|_| pick(&mut seed)).collect();
            if len > 200 && case % 2 == 0 {
                // A flood somewhere.
                let at = (rng(&mut seed) as usize) % (len - 100);
                hay[at..at + 90].fill(b'a');
            }
            for _ in 0..8 {
                let from = (rng(&mut seed) as usize) % (len + 1);
                let to = (from + (rng(&mut seed) as usize) % (CHUNK + 1)).min(len);
                let flood_from = from + (rng(&mut seed) as usize) % 200;
                assert_eq!(
                    round(true, &t, &hay, from, to, flood_from),
                    round(false, &t, &hay, from, to, flood_from),
                    "case {case} len {len} from {from} to {to} flood_from {flood_from}"
                );
            }
        }
    }
}
