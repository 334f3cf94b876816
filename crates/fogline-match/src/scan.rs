//! The scan driver: alternates filtering rounds and verification rounds over chunks of
//! positions, and handles floods (runs of one repeated byte) without per-position work.
//!
//! Floods: in a run of byte `x` spanning `[p, e)`, a start `s` with `s + m_x <= e` (where `m_x`
//! is `Tables::flood_m[x]`) can only begin a pattern made entirely of bytes matching `x`, and
//! every such pattern matches there (see `tables::floods`). Those starts are reported in one
//! `Sink::flood` call; the last `m_x - 1` starts of the run are filtered as usual.

use crate::filter::{self, Cands, Simd, CHUNK};
use crate::fold::{read_u32, read_u64};
use crate::sink::Sink;
use crate::tables::Tables;
use crate::verify;

/// Reports every match that starts in `lo..hi` of `hay` and ends at or after `min_end`.
pub(crate) fn scan<S: Sink>(
    simd: Simd,
    t: &Tables,
    hay: &[u8],
    lo: usize,
    hi: usize,
    min_end: usize,
    sink: &mut S,
) {
    let mut c = Cands::new();
    let mut pos = lo;
    let mut flood_from = lo;
    while pos < hi {
        let to = hi.min(pos + CHUNK);
        c.clear();
        let stop = filter::run(simd, t, hay, pos, to, flood_from, &mut c);
        verify_round(t, hay, pos, stop.stop, min_end, &c, sink);
        pos = stop.stop;
        if stop.flood {
            (pos, flood_from) = flood(t, hay, pos, hi, min_end, sink);
        }
    }
}

/// Most floods in real traffic (zero padding, 0xaa fill) are shorter than the filters' 32-byte
/// flood blocks need, and would otherwise cost one verification per position. So a long
/// candidate whose first four bytes are equal starts a flood of its own, limited to the round
/// `[.., end)`; later candidates inside it (long and short) are skipped.
const MAX_REGIONS: usize = 32;

fn verify_round<S: Sink>(
    t: &Tables,
    hay: &[u8],
    pos: usize,
    end: usize,
    min_end: usize,
    c: &Cands,
    sink: &mut S,
) {
    let mut regions = [(0usize, 0usize); MAX_REGIONS];
    let mut nreg = 0;
    let mut covered = 0;
    for &r in c.long() {
        let s = pos + r as usize;
        if s < covered {
            continue;
        }
        if nreg < MAX_REGIONS && s + 4 <= hay.len() {
            let x = hay[s];
            if read_u32(hay, s) == u32::from(x) * 0x0101_0101 {
                if let Some(last) = candidate_flood(t, hay, s, end, min_end, sink) {
                    regions[nreg] = (s, last);
                    nreg += 1;
                    covered = last + 1;
                    continue;
                }
            }
        }
        verify::long(t, hay, s, min_end, sink);
    }
    let mut k = 0;
    for &r in c.short() {
        let s = pos + r as usize;
        while k < nreg && regions[k].1 < s {
            k += 1;
        }
        if k < nreg && regions[k].0 <= s {
            continue;
        }
        verify::short(t, hay, s, min_end, sink);
    }
}

/// Reports the flood of the run starting at candidate `s` when it is long enough to be worth
/// it; returns the last start it decided (below `end`).
fn candidate_flood<S: Sink>(
    t: &Tables,
    hay: &[u8],
    s: usize,
    end: usize,
    min_end: usize,
    sink: &mut S,
) -> Option<usize> {
    let x = hay[s];
    let e = run_end(hay, s);
    let m = t.flood_m[usize::from(x)] as usize;
    if m == 0 {
        return Some(e.min(end) - 1);
    }
    // Below this the per-position verification is as cheap.
    if e - s < m + 8 {
        return None;
    }
    let last = (e - m).min(end - 1);
    let (a, b) = t.flood_pure[usize::from(x)];
    if a < b {
        sink.flood(&t.pure[a as usize..b as usize], s, last, min_end);
    }
    Some(last)
}

/// Handles the run of equal bytes starting at `pos`; returns where filtering resumes and the
/// position before which no new flood may be detected.
fn flood<S: Sink>(
    t: &Tables,
    hay: &[u8],
    pos: usize,
    hi: usize,
    min_end: usize,
    sink: &mut S,
) -> (usize, usize) {
    let x = hay[pos];
    let e = run_end(hay, pos);
    let m = t.flood_m[usize::from(x)] as usize;
    if m == 0 {
        // No pattern starts with `x`: nothing can start inside the run.
        return (e.min(hi), e);
    }
    if e - pos < m {
        return (pos, e);
    }
    let last = (e - m).min(hi - 1);
    let (a, b) = t.flood_pure[usize::from(x)];
    if a < b {
        sink.flood(&t.pure[a as usize..b as usize], pos, last, min_end);
    }
    (last + 1, e)
}

/// The end of the run of `hay[pos]` that starts at `pos`.
fn run_end(hay: &[u8], pos: usize) -> usize {
    let x = hay[pos];
    let w = u64::from(x) * 0x0101_0101_0101_0101;
    let mut e = pos;
    while e + 8 <= hay.len() && read_u64(hay, e) == w {
        e += 8;
    }
    while e < hay.len() && hay[e] == x {
        e += 1;
    }
    e
}
