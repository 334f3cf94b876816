//! The scan driver: alternates filtering rounds and verification rounds over chunks of
//! positions, and cuts runs of one repeated byte ("floods") out of both (see `runs`).
//!
//! Runs are found in two places: a filter stops at a block of 32 equal bytes, and the
//! verification round treats a long candidate whose first four bytes are equal as the start of
//! a run (most runs in real traffic are shorter than a filter block needs). Candidates inside a
//! decided run are skipped.

use crate::filter::{self, Cands, Impl, CHUNK};
use crate::fold::read_u32;
use crate::runs::run_end;
use crate::sink::Sink;
use crate::tables::Tables;
use crate::verify;

/// For letter bytes, a run found by a candidate is handled as a run only when it is this much
/// longer than `m_x` (below that, per-position verification is as cheap).
const MIN_LETTER_RUN: usize = 8;
/// Runs remembered per round (to skip their short candidates); later runs are verified per
/// position.
const MAX_REGIONS: usize = 32;

/// Reports every match that starts in `lo..hi` of `hay` and ends at or after `min_end`.
pub(crate) fn scan<S: Sink>(
    imp: Impl,
    t: &Tables,
    hay: &[u8],
    lo: usize,
    hi: usize,
    min_end: usize,
    sink: &mut S,
) {
    #[cfg(target_arch = "x86_64")]
    if imp == Impl::TableX86 {
        // SAFETY: `TableX86` is only chosen when the CPU has these features.
        return unsafe { scan_x86(imp, t, hay, lo, hi, min_end, sink) };
    }
    scan_with(imp, t, hay, lo, hi, min_end, sink);
}

/// `scan` compiled with the x86 features of the table filter, so that verification gets the
/// `popcnt` instruction (the short-pattern index counts bits at every candidate) and BMI.
///
/// # Safety
/// The CPU must support BMI1, BMI2, AVX2 and POPCNT.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "bmi1,bmi2,avx2,popcnt")]
unsafe fn scan_x86<S: Sink>(
    imp: Impl,
    t: &Tables,
    hay: &[u8],
    lo: usize,
    hi: usize,
    min_end: usize,
    sink: &mut S,
) {
    scan_with(imp, t, hay, lo, hi, min_end, sink);
}

#[inline(always)]
fn scan_with<S: Sink>(
    imp: Impl,
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
        // The round after next: the next one was asked for by the previous round.
        prefetch_round(hay, to + PREFETCH_AHEAD);
        c.clear();
        let stop = filter::run(imp, t, hay, pos, to, flood_from, &mut c);
        verify_round(t, hay, pos, stop.stop, min_end, &c, sink);
        pos = stop.stop;
        if stop.flood {
            // Positions the run does not decide are filtered as usual; no new flood test
            // before the run ends.
            flood_from = run_end(hay, pos);
            pos = t.runs.region(hay, pos, hi, min_end, 0, sink);
        }
    }
}

/// How far past the end of the current round the input is prefetched: the round after next.
const PREFETCH_AHEAD: usize = CHUNK;

/// Asks the CPU to load the input of a round starting at `from` (its 64-byte lines), so that in
/// a large buffer a later round's bytes arrive while this one is filtered. On the benchmark
/// machine the hardware prefetcher did not keep up with the filter: on 40 MB of random input
/// this took the table filter from 1.26 to 0.80 cycles per byte. (Prefetching the first rounds
/// of a small buffer when its scan starts did not help: they are needed at once.)
#[inline(always)]
fn prefetch_round(hay: &[u8], from: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let end = hay.len().min(from + CHUNK);
        let mut at = from;
        while at < end {
            // SAFETY: `at < hay.len()`; a prefetch has no other effect.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(hay.as_ptr().add(at).cast());
            }
            at += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (hay, from);
}

/// Verifies the candidates of one round (`pos..end`).
#[inline(always)]
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
                let next = t.runs.region(hay, s, end, min_end, MIN_LETTER_RUN, sink);
                if next > s {
                    regions[nreg] = (s, next);
                    nreg += 1;
                    covered = next;
                    continue;
                }
            }
        }
        verify::long(t, hay, s, min_end, sink);
    }
    if t.has_one {
        // Every start outside the decided runs (those reported their 1-byte matches).
        let mut from = pos.max(min_end.saturating_sub(1));
        for &(a, b) in &regions[..nreg] {
            if a > from {
                verify::one_bytes(t, hay, from, a, sink);
            }
            from = from.max(b);
        }
        if from < end {
            verify::one_bytes(t, hay, from, end, sink);
        }
    }
    let mut k = 0;
    for &r in c.short() {
        let s = pos + r as usize;
        while k < nreg && regions[k].1 <= s {
            k += 1;
        }
        if k < nreg && regions[k].0 <= s {
            continue;
        }
        verify::short(t, hay, s, min_end, sink);
    }
}
