//! Where matches go: a callback, a counter or a vector. Ends passed to a sink are offsets in the
//! scanned slice; the sink adds its `base` (the slice's offset in a stream).

use crate::runs::Pure;
use crate::Match;

pub(crate) trait Sink {
    /// One match of pattern `id` ending at `end`.
    fn emit(&mut self, id: u32, end: usize);

    /// One match of pattern `id` ending at `end` if `hit`; counting adds `hit` without a branch
    /// (the outcome of comparisons in match-dense text is not predictable).
    #[inline(always)]
    fn emit_if(&mut self, id: u32, end: usize, hit: bool) {
        if hit {
            self.emit(id, end);
        }
    }

    /// Whether only the number of matches is wanted (then `add` replaces `emit`).
    fn counts_only(&self) -> bool {
        false
    }

    /// Adds `n` matches without their ids (only called when `counts_only`).
    fn add(&mut self, _n: u64) {}

    /// Every pattern of `ids` matches, ending at `end`.
    fn emit_all(&mut self, ids: &[u32], end: usize) {
        for &id in ids {
            self.emit(id, end);
        }
    }

    /// Every pattern of `pure` matches at every start in `lo..=hi` (a run of one byte), except
    /// that matches ending before `min_end` are not wanted.
    fn flood(&mut self, pure: &[Pure], lo: usize, hi: usize, min_end: usize) {
        for &(id, len) in pure {
            let len = len as usize;
            let from = lo.max(min_end.saturating_sub(len));
            for s in from..=hi {
                self.emit(id, s + len);
            }
        }
    }
}

/// Calls a closure for every match.
pub(crate) struct Callback<F> {
    pub base: usize,
    pub f: F,
}

impl<F: FnMut(Match)> Sink for Callback<F> {
    #[inline(always)]
    fn emit(&mut self, id: u32, end: usize) {
        (self.f)(Match {
            pattern: id,
            end: self.base + end,
        });
    }
}

/// Counts matches; a run costs one multiplication per pattern instead of one call per match.
pub(crate) struct Counter {
    pub count: u64,
}

impl Sink for Counter {
    #[inline(always)]
    fn emit(&mut self, _id: u32, _end: usize) {
        self.count += 1;
    }

    #[inline(always)]
    fn emit_if(&mut self, _id: u32, _end: usize, hit: bool) {
        self.count += u64::from(hit);
    }

    fn emit_all(&mut self, ids: &[u32], _end: usize) {
        self.count += ids.len() as u64;
    }

    fn counts_only(&self) -> bool {
        true
    }

    fn add(&mut self, n: u64) {
        self.count += n;
    }

    fn flood(&mut self, pure: &[Pure], lo: usize, hi: usize, min_end: usize) {
        for &(_, len) in pure {
            let from = lo.max(min_end.saturating_sub(len as usize));
            if from <= hi {
                self.count += (hi - from + 1) as u64;
            }
        }
    }
}
