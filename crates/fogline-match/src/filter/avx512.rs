//! AVX-512 filter: the AVX2 design with sixteen lanes per gather, `vpermb` (VBMI) to form the
//! sixteen 4-byte windows from one 32-byte load, mask registers instead of movemask, a masked
//! gather for filter 3 (only lanes that passed "long" touch memory), and in-register compress
//! plus a full store to write candidate positions without a scalar loop.

use std::arch::x86_64::*;

use super::{scalar, Cands, Stop};
use crate::tables::{Tables, F3_MUL};

/// Lane `j` of the permuted row holds bytes `j..j + 4`.
const WINDOWS: [u8; 64] = {
    let mut w = [0u8; 64];
    let mut j = 0;
    while j < 64 {
        w[j] = (j / 4 + j % 4) as u8;
        j += 1;
    }
    w
};

const IOTA: [i32; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// Filters `from..to` like `scalar::filter`.
///
/// # Safety
/// The CPU must support AVX-512 F, BW and VBMI.
#[target_feature(enable = "avx512f,avx512bw,avx512vbmi")]
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
    let win = _mm512_loadu_si512(WINDOWS.as_ptr().cast());
    let iota = _mm512_loadu_si512(IOTA.as_ptr().cast());
    let f12 = t.filt12.as_ptr().cast::<i32>();
    let f3 = t.filt3.as_ptr().cast::<i32>();
    let mul = _mm512_set1_epi32(F3_MUL as i32);
    let shift = _mm_cvtsi32_si128(t.f3_shift as i32);
    let cap_a = _mm256_set1_epi8(b'A' as i8);
    let span = _mm256_set1_epi8(25);
    let case = _mm256_set1_epi8(0x20);
    let low16 = _mm512_set1_epi32(0xffff);
    let one = _mm512_set1_epi32(1);
    let two = _mm512_set1_epi32(2);
    let fifteen = _mm512_set1_epi32(15);
    let thirty_one = _mm512_set1_epi32(31);
    let mut i = from;
    // Reads reach `i + 16 + 32`.
    while i + 32 <= to && i + 48 <= n {
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
        for k in 0..2 {
            let base = i + 16 * k;
            let raw = _mm256_loadu_si256(p.add(base).cast());
            let d = _mm256_sub_epi8(raw, cap_a);
            let upper = _mm256_cmpeq_epi8(_mm256_min_epu8(d, span), d);
            let low = _mm256_or_si256(raw, _mm256_and_si256(upper, case));
            let w4 = _mm512_permutexvar_epi8(win, _mm512_castsi256_si512(low));
            let w = _mm512_and_si512(w4, low16);
            let word = _mm512_srli_epi32::<4>(w);
            let sh = _mm512_slli_epi32::<1>(_mm512_and_si512(w, fifteen));
            let bits = _mm512_srlv_epi32(_mm512_i32gather_epi32::<4>(word, f12), sh);
            let smask = _mm512_test_epi32_mask(bits, one);
            let lpass = _mm512_test_epi32_mask(bits, two);
            let pos = _mm512_add_epi32(_mm512_set1_epi32((base - from) as i32), iota);
            let lmask = if lpass != 0 {
                let h = _mm512_srl_epi32(_mm512_mullo_epi32(w4, mul), shift);
                let g3 = _mm512_mask_i32gather_epi32::<4>(
                    _mm512_setzero_si512(),
                    lpass,
                    _mm512_srli_epi32::<5>(h),
                    f3,
                );
                let b3 = _mm512_srlv_epi32(g3, _mm512_and_si512(h, thirty_one));
                _mm512_mask_test_epi32_mask(lpass, b3, one)
            } else {
                0
            };
            if smask | lmask != 0 {
                let (ps, pl, room) = c.spare();
                debug_assert!(room >= 16);
                // Compress in a register, then store all sixteen lanes; only the first
                // popcount lanes count (the rest land in the slack).
                _mm512_storeu_si512(ps.cast(), _mm512_maskz_compress_epi32(smask, pos));
                _mm512_storeu_si512(pl.cast(), _mm512_maskz_compress_epi32(lmask, pos));
                c.grow(smask.count_ones() as usize, lmask.count_ones() as usize);
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
