//! Record ratio: how a nonconformity value compares with the largest one seen
//! before, where that maximum decays by a factor `1 - decay` per update so old
//! extremes fade. A ratio above 1 is a new (decayed) record. Scale-free, so one
//! threshold fits streams of any unit. State: one number.

/// Decaying running maximum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Record {
    max: f64,
    decay: f64,
}

impl Record {
    /// `decay` per update, in `[0, 1)`.
    pub fn new(decay: f64) -> Record {
        Record {
            max: 0.0,
            decay: decay.clamp(0.0, 0.999_999),
        }
    }

    /// Returns `c / max` (0 before any positive maximum), then folds `c` in.
    pub fn ratio(&mut self, c: f64) -> f64 {
        let r = if self.max > 0.0 { c / self.max } else { 0.0 };
        self.max = (self.max * (1.0 - self.decay)).max(c);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_against_decayed_maximum() {
        let mut r = Record::new(0.5);
        assert_eq!(r.ratio(4.0), 0.0);
        assert_eq!(r.ratio(1.0), 0.25); // max was 4, now max(2, 1) = 2
        assert_eq!(r.ratio(3.0), 1.5); // max 2 -> max(1, 3) = 3
        assert_eq!(r.ratio(0.0), 0.0);
    }
}
