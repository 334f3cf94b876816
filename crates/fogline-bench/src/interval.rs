//! How sure a ratio is: a bootstrap interval for the ratio of two medians over repetitions.
//!
//! On a shared, noisy machine one cell's repetitions spread widely (at 1 kHz, single-run
//! p50s of one system range over +-20 %), so a ratio of medians such as 1.06 can be noise.
//! The report shows, beside the ratio, a 95 % percentile bootstrap interval: each system's
//! repetitions are resampled with replacement on their own (runs of different systems are
//! not paired: they ran at different times), the ratio of the two resampled medians is taken
//! [`RESAMPLES`] times, and the 2.5th and 97.5th percentiles of those ratios bound it. The
//! resampling is seeded, so a report is the same each time it is written.

/// Resampled ratios per interval.
pub const RESAMPLES: usize = 4000;

/// Fewest repetitions per system for an interval; with fewer, resampling says nothing.
pub const MIN_RUNS: usize = 3;

/// Which way an interval points, for a metric where `lower_is_better` or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The whole interval is on the subject's good side of 1.
    Better,
    /// The whole interval is on the subject's bad side of 1.
    Worse,
    /// The interval holds 1: the runs cannot tell the two apart.
    WithinNoise,
}

impl Verdict {
    /// The verdict of the interval `(lo, hi)` of subject / peer.
    pub fn of((lo, hi): (f64, f64), lower_is_better: bool) -> Verdict {
        let (good, bad) = if lower_is_better {
            (hi < 1.0, lo > 1.0)
        } else {
            (lo > 1.0, hi < 1.0)
        };
        if good {
            Verdict::Better
        } else if bad {
            Verdict::Worse
        } else {
            Verdict::WithinNoise
        }
    }

    /// Table text.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::WithinNoise => "within noise",
        }
    }
}

/// The 95 % bootstrap interval of median(`a`) / median(`b`); `None` when either side has
/// fewer than [`MIN_RUNS`] values or a resampled median of `b` is not positive.
pub fn ratio_of_medians(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    if a.len() < MIN_RUNS || b.len() < MIN_RUNS {
        return None;
    }
    let mut rng = SplitMix(0x5eed_f061_17e0_0001);
    let mut ra = vec![0.0; a.len()];
    let mut rb = vec![0.0; b.len()];
    let mut ratios = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        resample(a, &mut ra, &mut rng);
        resample(b, &mut rb, &mut rng);
        let (ma, mb) = (median_in_place(&mut ra), median_in_place(&mut rb));
        if mb.is_nan() || mb <= 0.0 || !ma.is_finite() {
            return None;
        }
        ratios.push(ma / mb);
    }
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((RESAMPLES - 1) as f64 * q).round() as usize];
    Some((at(0.025), at(0.975)))
}

fn resample(from: &[f64], into: &mut [f64], rng: &mut SplitMix) {
    for x in into.iter_mut() {
        *x = from[rng.below(from.len())];
    }
}

/// Median, min and max of `v`; `None` for no values.
pub fn spread(v: &[f64]) -> Option<(f64, f64, f64)> {
    if v.is_empty() {
        return None;
    }
    let mut v = v.to_vec();
    let med = median_in_place(&mut v);
    Some((med, v[0], v[v.len() - 1]))
}

/// The median of `v` (sorted in place); 0 for no values.
pub(crate) fn median_in_place(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// SplitMix64 (Steele, Lea and Flood 2014): small, seeded, and plenty for resampling.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the bias for n of a few dozen is ~1e-18).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_runs_give_no_interval() {
        assert_eq!(ratio_of_medians(&[1.0, 2.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(ratio_of_medians(&[1.0, 2.0, 3.0], &[1.0]), None);
        assert_eq!(ratio_of_medians(&[1.0, 2.0, 3.0], &[0.0, 0.0, 0.0]), None);
    }

    #[test]
    fn identical_runs_give_a_point() {
        let (lo, hi) = ratio_of_medians(&[4.0; 5], &[2.0; 5]).unwrap();
        assert_eq!((lo, hi), (2.0, 2.0));
    }

    #[test]
    fn separated_runs_exclude_one_and_overlapping_runs_hold_it() {
        let fast = [50.0, 52.0, 49.0, 51.0, 50.5];
        let slow = [70.0, 72.0, 69.0, 71.0, 75.0];
        let i = ratio_of_medians(&fast, &slow).unwrap();
        assert!(i.1 < 1.0, "{i:?}");
        assert_eq!(Verdict::of(i, true), Verdict::Better);
        assert_eq!(Verdict::of(i, false), Verdict::Worse);
        let i = ratio_of_medians(&slow, &fast).unwrap();
        assert!(i.0 > 1.0, "{i:?}");
        assert_eq!(Verdict::of(i, true), Verdict::Worse);
        // Issue 4's QoS 0 256 B cell at 1 kHz (bench/results/mqtt-1khz, p50 us per run).
        let fogline = [78.5, 83.1, 81.7, 76.8, 88.4, 75.1, 85.3, 100.4, 69.1, 72.6];
        let mosquitto = [82.3, 87.7, 107.1, 68.5, 75.1, 75.3, 99.4, 71.0, 74.0, 63.5];
        let i = ratio_of_medians(&fogline, &mosquitto).unwrap();
        assert!(i.0 < 1.0 && i.1 > 1.0, "{i:?}");
        assert_eq!(Verdict::of(i, true), Verdict::WithinNoise);
    }

    #[test]
    fn the_interval_holds_the_ratio_of_medians_and_is_repeatable() {
        let a = [10.0, 12.0, 9.0, 15.0, 11.0, 30.0];
        let b = [20.0, 18.0, 25.0, 21.0, 19.0];
        let point = 11.5 / 20.0;
        let (lo, hi) = ratio_of_medians(&a, &b).unwrap();
        assert!(lo <= point && point <= hi, "{lo} {point} {hi}");
        assert_eq!(ratio_of_medians(&a, &b), Some((lo, hi)));
        // Every resampled median is one of the values (or a mean of two), so the bounds
        // cannot leave the range of possible ratios.
        assert!(lo >= 9.0 / 25.0 && hi <= 30.0 / 18.0);
    }

    #[test]
    fn draws_cover_every_index_evenly() {
        let mut rng = SplitMix(1);
        let mut seen = [0u32; 7];
        for _ in 0..70_000 {
            seen[rng.below(7)] += 1;
        }
        assert!(
            seen.iter().all(|&n| (9_000..11_000).contains(&n)),
            "{seen:?}"
        );
    }
}
