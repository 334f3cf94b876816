//! Small numeric helpers shared by the detectors.

/// Complementary error function, fractional error below 1.2e-7 everywhere
/// (Chebyshev fit from Numerical Recipes, 2nd ed., section 6.2).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Upper tail probability of the standard normal beyond `|z|` (one side).
pub fn normal_tail(z: f64) -> f64 {
    0.5 * erfc(z.abs() / std::f64::consts::SQRT_2)
}

/// Exponentially weighted mean and variance with smoothing factor `alpha`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EwStats {
    alpha: f64,
    /// Current mean.
    pub mean: f64,
    /// Current variance.
    pub var: f64,
    /// Points seen (saturating).
    pub n: u64,
}

impl EwStats {
    /// New, empty statistics.
    pub fn new(alpha: f64) -> EwStats {
        EwStats {
            alpha,
            mean: 0.0,
            var: 0.0,
            n: 0,
        }
    }

    /// Standardised deviation of `x` from the current mean (0 before two points;
    /// `floor` keeps a flat history from giving infinite z).
    pub fn z(&self, x: f64, floor: f64) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        (x - self.mean) / self.var.sqrt().max(floor)
    }

    /// Adds `x`. The first points use plain averaging so early estimates are not
    /// biased towards zero.
    pub fn push(&mut self, x: f64) {
        self.n = self.n.saturating_add(1);
        let a = self.alpha.max(1.0 / self.n as f64);
        let d = x - self.mean;
        self.mean += a * d;
        self.var = (1.0 - a) * (self.var + a * d * d);
    }
}

/// Maps any float to a valid score: NaN to 0, everything else clamped to [0, 1].
pub fn unit(s: f64) -> f64 {
    if s.is_nan() {
        0.0
    } else {
        s.clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erfc_known_values() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_207).abs() < 1e-7);
        assert!((erfc(-1.0) - 1.842_700_793).abs() < 1e-7);
        assert!((erfc(3.0) / 2.209_049_7e-5 - 1.0).abs() < 1e-6);
        assert!((normal_tail(1.959_964) - 0.025).abs() < 1e-7);
    }

    #[test]
    fn ew_stats_track_mean_and_variance() {
        let mut s = EwStats::new(0.01);
        for i in 0..10_000 {
            s.push(if i % 2 == 0 { 1.0 } else { -1.0 });
        }
        assert!(s.mean.abs() < 0.02);
        assert!((s.var - 1.0).abs() < 0.05);
        assert!((s.z(3.0, 1e-9) - 3.0).abs() < 0.1);
    }
}
