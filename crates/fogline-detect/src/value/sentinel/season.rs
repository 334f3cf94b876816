//! Seasonal level: one exponentially weighted mean per time slot
//! (`slot = (timestamp / slot_secs) mod slots`, e.g. 168 hours of the week), so
//! a value is compared with what this stream usually does at this time. Slots
//! are keyed by the timestamp alone: irregular or gappy streams work too.
//! State: `slots` means and counts, fixed.

/// Per-slot means.
#[derive(Debug, Clone)]
pub struct Season {
    slot_secs: i64,
    alpha: f64,
    slots: Vec<(f64, u32)>,
}

impl Season {
    /// `slots` slots of `slot_secs` seconds, means smoothed by `alpha`.
    pub fn new(slots: usize, slot_secs: i64, alpha: f64) -> Season {
        Season {
            slot_secs: slot_secs.max(1),
            alpha,
            slots: vec![(0.0, 0); slots.max(1)],
        }
    }

    /// Returns `|value - slot mean|` once the slot has been seen twice, then
    /// folds `value` into the slot.
    pub fn deviation(&mut self, timestamp: i64, value: f64) -> Option<f64> {
        let n = self.slots.len() as i64;
        let slot = timestamp.div_euclid(self.slot_secs).rem_euclid(n) as usize;
        let (mean, seen) = &mut self.slots[slot];
        let d = (*seen >= 2).then(|| (value - *mean).abs());
        *mean = if *seen == 0 {
            value
        } else {
            *mean + self.alpha * (value - *mean)
        };
        *seen = seen.saturating_add(1);
        d
    }

    /// Bytes of state.
    pub fn state_bytes(&self) -> usize {
        std::mem::size_of::<Self>() + self.slots.capacity() * std::mem::size_of::<(f64, u32)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_with_the_same_slot() {
        let mut s = Season::new(24, 3600, 0.5);
        // Hour 0 is always 10, hour 1 always 50.
        for day in 0..3 {
            assert!(s.deviation(day * 86_400, 10.0).is_none_or(|d| d == 0.0));
            assert!(s
                .deviation(day * 86_400 + 3600, 50.0)
                .is_none_or(|d| d == 0.0));
        }
        assert_eq!(s.deviation(3 * 86_400, 50.0), Some(40.0));
        // Before the epoch: hour 23, never seen.
        assert_eq!(s.deviation(-3600, 10.0), None);
    }
}
