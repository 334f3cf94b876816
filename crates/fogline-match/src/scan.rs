//! The scan driver: alternates filtering rounds and verification rounds over chunks of
//! positions, and handles floods (runs of one repeated byte) without per-position work.
//!
//! Floods: in a run of byte `x` spanning `[p, e)`, a start `s` with `s + m_x <= e` (where `m_x`
//! is `Tables::flood_m[x]`) can only begin a pattern made entirely of bytes matching `x`, and
//! every such pattern matches there (see `tables::floods`). Those starts are reported in one
//! `Sink::flood` call; the last `m_x - 1` starts of the run are filtered as usual.

use crate::filter::{self, Cands, Simd, CHUNK};
use crate::fold::read_u64;
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
        for &r in c.short() {
            verify::short(t, hay, pos + r as usize, min_end, sink);
        }
        for &r in c.long() {
            verify::long(t, hay, pos + r as usize, min_end, sink);
        }
        pos = stop.stop;
        if stop.flood {
            (pos, flood_from) = flood(t, hay, pos, hi, min_end, sink);
        }
    }
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
