//! Detectors for numeric streams.
//!
//! Every detector implements [`Detector`]: `update(timestamp, value)` returns an
//! anomaly score in `[0, 1]` for that point, using only the points before it and
//! itself (no look-ahead). State is bounded by the detector's parameters;
//! [`Detector::state_bytes`] reports it so tests can check it does not grow.
//!
//! | name | module | idea |
//! | --- | --- | --- |
//! | `ewma` | [`ewma`] | z-score against an exponentially weighted mean and variance |
//! | `cusum` | [`cusum`] | two-sided cumulative sum of standardised deviations |
//! | `page-hinkley` | [`page_hinkley`] | Page-Hinkley test for a shift in the mean |
//! | `windowed-gaussian` | [`windowed_gaussian`] | NAB's windowed Gaussian: tail probability over a sliding window |
//! | `relative-entropy` | [`relative_entropy`] | Wang et al.'s multiple-hypothesis relative-entropy test |
//! | `sentinel` | [`sentinel`] | multi-scale shape and level novelty against decaying records, with alarm suppression |

pub mod cusum;
pub mod ewma;
pub mod page_hinkley;
pub mod relative_entropy;
pub mod sentinel;
pub mod stats;
pub mod windowed_gaussian;

/// An online detector over a stream of `(timestamp, value)` points.
pub trait Detector: Send {
    /// Consumes one point and returns its anomaly score in `[0, 1]`.
    /// `timestamp` is in seconds (any epoch); non-finite values must not panic.
    fn update(&mut self, timestamp: i64, value: f64) -> f64;
    /// Forgets everything, as if newly built with the same parameters.
    fn reset(&mut self);
    /// Bytes of state held (inline and on the heap); bounded by the parameters.
    fn state_bytes(&self) -> usize;
}

/// Names accepted by [`by_name`], in scoreboard order.
pub const DETECTOR_NAMES: &[&str] = &[
    "sentinel",
    "relative-entropy",
    "windowed-gaussian",
    "cusum",
    "page-hinkley",
    "ewma",
];

/// A detector with its default (corpus-wide) parameters, by name.
///
/// # Example
/// ```
/// let mut d = fogline_detect::by_name("ewma").unwrap();
/// let s = d.update(0, 1.0);
/// assert!((0.0..=1.0).contains(&s));
/// ```
pub fn by_name(name: &str) -> Option<Box<dyn Detector>> {
    Some(match name {
        "ewma" => Box::new(ewma::Ewma::default()),
        "cusum" => Box::new(cusum::Cusum::default()),
        "page-hinkley" => Box::new(page_hinkley::PageHinkley::default()),
        "windowed-gaussian" => Box::new(windowed_gaussian::WindowedGaussian::default()),
        "sentinel" => Box::new(sentinel::Sentinel::default()),
        "relative-entropy" => Box::new(relative_entropy::RelativeEntropy::default()),
        _ => return None,
    })
}

#[cfg(test)]
pub(crate) mod testutil {
    use super::Detector;

    /// A deterministic pseudo-random generator for test signals (xorshift64*).
    pub struct Rng(pub u64);

    impl Rng {
        /// Uniform in [0, 1).
        pub fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
        }

        /// Approximately standard normal (sum of 12 uniforms).
        pub fn normal(&mut self) -> f64 {
            (0..12).map(|_| self.uniform()).sum::<f64>() - 6.0
        }
    }

    /// Noise around 10 with a jump to 20 at index `at`; returns the scores.
    pub fn run_step(d: &mut dyn Detector, n: usize, at: usize) -> Vec<f64> {
        let mut rng = Rng(42);
        (0..n)
            .map(|i| {
                let base = if i >= at { 20.0 } else { 10.0 };
                d.update(i as i64 * 300, base + rng.normal())
            })
            .collect()
    }

    /// Checks the contract every detector shares: scores in [0, 1], bounded
    /// state, and `reset` reproducing a fresh run exactly.
    pub fn check_contract(d: &mut dyn Detector) {
        let first = run_step(d, 3000, 2000);
        assert!(
            first.iter().all(|s| (0.0..=1.0).contains(s)),
            "scores in [0, 1]"
        );
        let mid = d.state_bytes();
        let mut rng = Rng(7);
        for i in 0..30_000 {
            let s = d.update(i, rng.normal() * 1e3);
            assert!((0.0..=1.0).contains(&s));
        }
        for v in [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e300,
            -1e300,
            0.0,
        ] {
            let s = d.update(0, v);
            assert!((0.0..=1.0).contains(&s), "score {s} for {v}");
        }
        assert!(
            d.state_bytes() <= mid.max(1) * 2,
            "state grew: {mid} -> {}",
            d.state_bytes()
        );
        d.reset();
        let again = run_step(d, 3000, 2000);
        assert_eq!(first, again, "reset restores the initial state");
    }
}

#[cfg(test)]
mod proptests {
    use super::{by_name, DETECTOR_NAMES};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any detector, any input (including NaN, infinities, huge and
        /// repeated values, unordered timestamps): scores stay in [0, 1].
        #[test]
        fn any_input_gives_valid_scores(
            points in proptest::collection::vec((any::<i64>(), any::<f64>()), 0..400),
        ) {
            for name in DETECTOR_NAMES {
                let mut d = by_name(name).expect("registered");
                for &(t, v) in &points {
                    let s = d.update(t, v);
                    prop_assert!((0.0..=1.0).contains(&s), "{name}: {s}");
                }
            }
        }
    }
}
