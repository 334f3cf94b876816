//! Operator timings by sampling: reading the clock around every record cost a tenth of a
//! rule's time on this machine (`clock_gettime` 10-14 % of samples in the rules
//! benchmark), so one record in [`EVERY`] is timed and counts for [`EVERY`].

use std::cell::Cell;
use std::time::Instant;

/// One call in this many is timed.
pub(crate) const EVERY: u32 = 16;

/// Decides which calls are timed.
#[derive(Debug, Default)]
pub(crate) struct Sampler(Cell<u32>);

impl Sampler {
    /// The start of a timed call, or `None` for one not timed.
    pub(crate) fn start(&self) -> Option<Instant> {
        let n = self.0.get().wrapping_add(1);
        self.0.set(n);
        (n % EVERY == 1).then(Instant::now)
    }
}

/// Adds the time since `since` (scaled to the calls it stands for) to `ns`, and returns
/// now, the start of the next stage; nothing for a call not timed.
pub(crate) fn lap(ns: &mut u64, since: Option<Instant>) -> Option<Instant> {
    since.map(|t| {
        let now = Instant::now();
        *ns += (now - t).as_nanos() as u64 * u64::from(EVERY);
        now
    })
}
