//! AVX2 filter (V-PATCH, Algorithm 2 of section 2.4.2): eight positions per gather.
//!
//! Per 8 positions: one 16-byte load, vector case folding, a shuffle into eight overlapping
//! 4-byte windows (Figure 2.2), one gather from the merged filters 1+2 (filter merging,
//! Figure 2.3), and, only when some lane passed "long", a multiplicative hash of the windows and
//! a second gather from filter 3. Candidates leave the registers as bit masks.

use std::arch::x86_64::*;

use super::{scalar, Cands, Stop};
use crate::tables::{Tables, F3_MUL};

/// Lane `j` of the shuffled row holds bytes `j..j + 4`; `vpshufb` works within 128-bit halves,
/// so the row is broadcast to both halves first.
const WINDOWS: [i8; 32] = [
    0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5, 3, 4, 5, 6, //
    4, 5, 6, 7, 5, 6, 7, 8, 6, 7, 8, 9, 7, 8, 9, 10,
];

/// Filters `from..to` like `scalar::filter`.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(crate) unsafe fn filter(
    t: &Tables,
    hay: &[u8],
    from: usize,
    to: usize,
    flood_from: usize,
    c: &mut Cands,
) -> Stop {
    let n = hay.len();
    let p = hay.as_ptr();
    let win = _mm256_loadu_si256(WINDOWS.as_ptr().cast());
    let f12 = t.filt12.as_ptr().cast::<i32>();
    let f3 = t.filt3.as_ptr().cast::<i32>();
    let mul = _mm256_set1_epi32(F3_MUL as i32);
    let shift = _mm_cvtsi32_si128(t.f3_shift as i32);
    let cap_a = _mm_set1_epi8(b'A' as i8);
    let span = _mm_set1_epi8(25);
    let case = _mm_set1_epi8(0x20);
    let low16 = _mm256_set1_epi32(0xffff);
    let fifteen = _mm256_set1_epi32(15);
    let thirty_one = _mm256_set1_epi32(31);
    let mut i = from;
    // Reads reach `i + 24 + 16`.
    while i + 32 <= to && i + 40 <= n {
        if i >= flood_from {
            let v = _mm256_loadu_si256(p.add(i).cast());
            let first = _mm256_set1_epi8(*p.add(i) as i8);
            if _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, first)) == -1 {
                return Stop {
                    stop: i,
                    flood: true,
                };
            }
        }
        for k in 0..4 {
            let base = i + 8 * k;
            let raw = _mm_loadu_si128(p.add(base).cast());
            let d = _mm_sub_epi8(raw, cap_a);
            let upper = _mm_cmpeq_epi8(_mm_min_epu8(d, span), d);
            let low = _mm_or_si128(raw, _mm_and_si128(upper, case));
            let w4 = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(low), win);
            let w = _mm256_and_si256(w4, low16);
            let word = _mm256_srli_epi32::<4>(w);
            let sh = _mm256_slli_epi32::<1>(_mm256_and_si256(w, fifteen));
            let bits = _mm256_srlv_epi32(_mm256_i32gather_epi32::<4>(f12, word), sh);
            let mut smask =
                _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32::<31>(bits))) as u32;
            let lpass =
                _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32::<30>(bits))) as u32;
            let rel = (base - from) as u32;
            while smask != 0 {
                c.push_short(rel + smask.trailing_zeros());
                smask &= smask - 1;
            }
            if lpass != 0 {
                let h = _mm256_srl_epi32(_mm256_mullo_epi32(w4, mul), shift);
                let g3 = _mm256_i32gather_epi32::<4>(f3, _mm256_srli_epi32::<5>(h));
                let b3 = _mm256_srlv_epi32(g3, _mm256_and_si256(h, thirty_one));
                let mut lmask = lpass
                    & _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32::<31>(b3))) as u32;
                while lmask != 0 {
                    c.push_long(rel + lmask.trailing_zeros());
                    lmask &= lmask - 1;
                }
            }
        }
        i += 32;
    }
    while i < to {
        scalar::tail(t, hay, from, i, c);
        i += 1;
    }
    Stop {
        stop: to,
        flood: false,
    }
}
