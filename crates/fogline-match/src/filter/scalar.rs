//! The portable filter (S-PATCH, Algorithm 1 of section 2.4.1, with filters 1 and 2 merged), also
//! used by the vector filters for the last positions of a buffer.

use super::{Cands, Stop};
use crate::fold::{fold, fold_u32, read_u32, read_u64};
use crate::tables::{f3_index, Tables};

/// Whether `hay[at..at + 32]` is one repeated byte; the caller guarantees `at + 32 <= hay.len()`.
#[inline]
pub(crate) fn is_run32(hay: &[u8], at: usize) -> bool {
    let w = u64::from(hay[at]) * 0x0101_0101_0101_0101;
    (0..4).all(|k| read_u64(hay, at + 8 * k) == w)
}

/// The filter bits ("short" = 1, "long" = 2) and filter-3 test of position `i`.
#[inline(always)]
pub(crate) fn test(t: &Tables, hay: &[u8], i: usize) -> (bool, bool) {
    let n = hay.len();
    let b1 = if i + 1 < n { fold(hay[i + 1]) } else { 0 };
    let w = usize::from(fold(hay[i])) | usize::from(b1) << 8;
    let bits = (t.filt12[w >> 4] >> ((w & 15) * 2)) & 3;
    let short = bits & 1 != 0;
    let mut long = false;
    if bits & 2 != 0 && i + 4 <= n {
        let h = f3_index(fold_u32(read_u32(hay, i)), t.f3_shift) as usize;
        long = t.filt3[h >> 5] & (1 << (h & 31)) != 0;
    }
    (short, long)
}

pub(crate) fn filter(
    t: &Tables,
    hay: &[u8],
    from: usize,
    to: usize,
    flood_from: usize,
    c: &mut Cands,
) -> Stop {
    for i in from..to {
        if (i - from).is_multiple_of(32)
            && i >= flood_from
            && i + 32 <= hay.len()
            && is_run32(hay, i)
        {
            return Stop {
                stop: i,
                flood: true,
            };
        }
        tail(t, hay, from, i, c);
    }
    Stop {
        stop: to,
        flood: false,
    }
}

/// Filters the one position `i` (no flood test); used for the ends of vector loops.
#[inline(always)]
pub(crate) fn tail(t: &Tables, hay: &[u8], from: usize, i: usize, c: &mut Cands) {
    let (short, long) = test(t, hay, i);
    if short {
        c.push_short((i - from) as u32);
    }
    if long {
        c.push_long((i - from) as u32);
    }
}
