//! aarch64 NEON filter (Raspberry Pi class boards). NEON has no gather (thesis section 2.3), so
//! only the data-parallel parts are vectorised: case folding of 16 bytes at a time and the flood
//! test; the filter lookups themselves are scalar, on the folded bytes.

use std::arch::aarch64::*;

use super::{scalar, Cands, Stop};
use crate::tables::{f3_index, Tables};

/// Filters `from..to` like `scalar::filter`.
pub(crate) fn filter(
    t: &Tables,
    hay: &[u8],
    from: usize,
    to: usize,
    flood_from: usize,
    c: &mut Cands,
) -> Stop {
    // SAFETY: NEON is part of the aarch64 baseline; every load reads `i..i + 32` (or
    // `base..base + 16` with `base + 16 <= i + 32`), inside `hay` by the loop condition.
    unsafe { filter_neon(t, hay, from, to, flood_from, c) }
}

#[target_feature(enable = "neon")]
unsafe fn filter_neon(
    t: &Tables,
    hay: &[u8],
    from: usize,
    to: usize,
    flood_from: usize,
    c: &mut Cands,
) -> Stop {
    let n = hay.len();
    let p = hay.as_ptr();
    let cap_a = vdupq_n_u8(b'A');
    let span = vdupq_n_u8(25);
    let case = vdupq_n_u8(0x20);
    // Folded bytes of positions `i..i + 32` plus three bytes of look-ahead.
    let mut folded = [0u8; 48];
    let mut i = from;
    while i + 32 <= to && i + 48 <= n {
        if i >= flood_from {
            let first = vdupq_n_u8(*p.add(i));
            let a = vceqq_u8(vld1q_u8(p.add(i)), first);
            let b = vceqq_u8(vld1q_u8(p.add(i + 16)), first);
            if vminvq_u8(vandq_u8(a, b)) == 0xff {
                return Stop {
                    stop: i,
                    flood: true,
                };
            }
        }
        for k in 0..3 {
            let raw = vld1q_u8(p.add(i + 16 * k));
            let upper = vcleq_u8(vsubq_u8(raw, cap_a), span);
            let low = vorrq_u8(raw, vandq_u8(upper, case));
            vst1q_u8(folded.as_mut_ptr().add(16 * k), low);
        }
        for j in 0..32 {
            let w = usize::from(folded[j]) | usize::from(folded[j + 1]) << 8;
            let bits = (t.filt12[w >> 4] >> ((w & 15) * 2)) & 3;
            let rel = (i + j - from) as u32;
            if bits & 1 != 0 {
                c.push_short(rel);
            }
            if bits & 2 != 0 {
                let k =
                    u32::from_le_bytes([folded[j], folded[j + 1], folded[j + 2], folded[j + 3]]);
                let h = f3_index(k, t.f3_shift) as usize;
                if t.filt3[h >> 5] & (1 << (h & 31)) != 0 {
                    c.push_long(rel);
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
