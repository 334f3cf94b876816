//! Stage 4: run detectors over the corpus and normalise their scores.
//!
//! Per profile: the threshold is optimised over all files jointly (stage 3); the
//! raw score at that threshold is normalised as
//! `100 * (raw - null) / (perfect - null)`, where `null` is the optimised raw
//! score of NAB's null detector (a constant 0.5 on every row) and `perfect` is
//! `tp * number of labelled windows`.

use super::corpus::{Corpus, Profile};
use super::sweep::{sweep_file, Row};
use super::threshold::{at, best, scores_by_threshold, ThresholdScore};
use super::NabError;
use crate::Detector;
use std::time::Instant;

/// One profile's result for one detector.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProfileScore {
    /// Profile name.
    pub profile: String,
    /// Optimised threshold.
    pub threshold: f64,
    /// Raw score at that threshold.
    pub raw: f64,
    /// Raw score of the null detector.
    pub null: f64,
    /// Raw score of the perfect detector.
    pub perfect: f64,
    /// Normalised score: 0 = null, 100 = perfect.
    pub normalised: f64,
    /// Windows detected at the threshold.
    pub windows_detected: usize,
    /// Detections outside windows at the threshold.
    pub false_positives: usize,
}

/// One scoreboard line, as `fogline-bench detect --json` prints it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BoardRow {
    /// Detector name.
    pub name: String,
    /// Normalised score, standard profile.
    pub standard: f64,
    /// Normalised score, reward_low_FP_rate profile.
    pub reward_low_fp: f64,
    /// Normalised score, reward_low_FN_rate profile.
    pub reward_low_fn: f64,
    /// Mean cost of one `update` call over the corpus, nanoseconds.
    pub ns_per_point: f64,
}

impl BoardRow {
    /// Builds a row from [`evaluate`]'s output (profiles looked up by name).
    pub fn new(name: &str, profiles: &[ProfileScore], ns_per_point: f64) -> BoardRow {
        let get = |p: &str| {
            profiles
                .iter()
                .find(|s| s.profile == p)
                .map_or(f64::NAN, |s| s.normalised)
        };
        BoardRow {
            name: name.to_string(),
            standard: get("standard"),
            reward_low_fp: get("reward_low_FP_rate"),
            reward_low_fn: get("reward_low_FN_rate"),
            ns_per_point,
        }
    }
}

/// Runs a fresh detector from `make` over every file in order (one detector per
/// file, as NAB does). Returns the scores per file and the mean nanoseconds per
/// `update` call.
pub fn run_detector(corpus: &Corpus, make: &dyn Fn() -> Box<dyn Detector>) -> (Vec<Vec<f64>>, f64) {
    let mut all = Vec::with_capacity(corpus.files.len());
    let mut nanos = 0u128;
    for f in &corpus.files {
        let mut d = make();
        let mut scores = Vec::with_capacity(f.values.len());
        let start = Instant::now();
        for (&t, &v) in f.timestamps.iter().zip(&f.values) {
            scores.push(d.update(t, v));
        }
        nanos += start.elapsed().as_nanos();
        all.push(scores);
    }
    (all, nanos as f64 / corpus.row_count().max(1) as f64)
}

/// Scores per-file detector outputs under every profile of the corpus, each at
/// its optimised threshold.
///
/// # Errors
/// [`NabError::Scores`] if the number of files or rows differs from the corpus or
/// a score is not a number in `[0, 1]`.
pub fn evaluate(corpus: &Corpus, scores: &[Vec<f64>]) -> Result<Vec<ProfileScore>, NabError> {
    evaluate_with(corpus, scores, None)
}

/// Like [`evaluate`], but at given thresholds (one per profile, in corpus
/// order) instead of optimised ones: to reproduce scores NAB computed with
/// thresholds it had recorded.
///
/// # Errors
/// As [`evaluate`], and if the number of thresholds differs from the profiles.
pub fn evaluate_at(
    corpus: &Corpus,
    scores: &[Vec<f64>],
    thresholds: &[f64],
) -> Result<Vec<ProfileScore>, NabError> {
    if thresholds.len() != corpus.profiles.len() {
        return Err(NabError::Scores(format!(
            "{} thresholds for {} profiles",
            thresholds.len(),
            corpus.profiles.len()
        )));
    }
    evaluate_with(corpus, scores, Some(thresholds))
}

fn evaluate_with(
    corpus: &Corpus,
    scores: &[Vec<f64>],
    fixed: Option<&[f64]>,
) -> Result<Vec<ProfileScore>, NabError> {
    if scores.len() != corpus.files.len() {
        return Err(NabError::Scores(format!(
            "{} score files for {} data files",
            scores.len(),
            corpus.files.len()
        )));
    }
    for (f, s) in corpus.files.iter().zip(scores) {
        if s.len() != f.values.len() {
            return Err(NabError::Scores(format!(
                "{}: {} scores for {} rows",
                f.path,
                s.len(),
                f.values.len()
            )));
        }
        if let Some(x) = s.iter().find(|x| !(0.0..=1.0).contains(*x)) {
            return Err(NabError::Scores(format!(
                "{}: score {x} outside [0, 1]",
                f.path
            )));
        }
    }
    let nulls: Vec<Vec<f64>> = corpus
        .files
        .iter()
        .map(|f| vec![0.5; f.values.len()])
        .collect();
    let mut out = Vec::new();
    for (i, p) in corpus.profiles.iter().enumerate() {
        let null = best(&sweep_all(corpus, &nulls, p)).score;
        let all = sweep_all(corpus, scores, p);
        let b = match fixed {
            Some(t) => at(&all, t[i]),
            None => best(&all),
        };
        let perfect = p.tp * corpus.window_count() as f64;
        out.push(ProfileScore {
            profile: p.name.clone(),
            threshold: b.threshold,
            raw: b.score,
            null,
            perfect,
            normalised: 100.0 * (b.score - null) / (perfect - null),
            windows_detected: b.windows_detected,
            false_positives: b.false_positives,
        });
    }
    Ok(out)
}

fn sweep_all(corpus: &Corpus, scores: &[Vec<f64>], p: &Profile) -> Vec<ThresholdScore> {
    let mut rows: Vec<Row> = Vec::with_capacity(corpus.row_count());
    let mut first = 0u32;
    for (f, s) in corpus.files.iter().zip(scores) {
        sweep_file(f, s, p, first, &mut rows);
        first += f.windows.len() as u32;
    }
    scores_by_threshold(&mut rows, p.fn_)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nab::corpus::DataFile;

    fn corpus() -> Corpus {
        let n = 200;
        let file = |path: &str, windows| DataFile {
            path: path.into(),
            timestamps: (0..n as i64).collect(),
            values: vec![0.0; n],
            windows,
        };
        Corpus {
            files: vec![file("a.csv", vec![(100, 119)]), file("b.csv", vec![])],
            profiles: vec![
                Profile {
                    name: "standard".into(),
                    tp: 1.0,
                    fn_: 1.0,
                    fp: 0.11,
                },
                Profile {
                    name: "reward_low_FN_rate".into(),
                    tp: 1.0,
                    fn_: 2.0,
                    fp: 0.11,
                },
            ],
        }
    }

    #[test]
    fn perfect_and_null() {
        let c = corpus();
        let mut perfect = vec![vec![0.0; 200], vec![0.0; 200]];
        perfect[0][100] = 1.0;
        let r = evaluate(&c, &perfect).unwrap();
        assert_eq!(r[0].null, -1.0);
        assert_eq!(r[1].null, -2.0);
        assert!((r[0].normalised - 100.0).abs() < 1e-9);
        assert!((r[1].normalised - 100.0).abs() < 1e-9);
        let zero = vec![vec![0.0; 200], vec![0.0; 200]];
        assert_eq!(evaluate(&c, &zero).unwrap()[0].normalised, 0.0);
    }

    #[test]
    fn late_detection_and_false_positive() {
        let c = corpus();
        let mut s = vec![vec![0.0; 200], vec![0.0; 200]];
        s[0][109] = 1.0; // middle of the window (position -11/20)
        s[1][50] = 1.0; // a false positive before any window
        let r = evaluate(&c, &s).unwrap();
        let tp = crate::nab::sweep::scaled_sigmoid(-11.0 / 20.0)
            / crate::nab::sweep::scaled_sigmoid(-1.0);
        assert!((r[0].raw - (tp - 0.11)).abs() < 1e-12);
        assert!((r[0].normalised - 100.0 * (tp - 0.11 + 1.0) / 2.0).abs() < 1e-9);
        assert_eq!(r[0].false_positives, 1);
        // At a threshold above both detections nothing is detected: the null score.
        let r = evaluate_at(&c, &s, &[1.05, 1.05]).unwrap();
        assert_eq!(r[0].normalised, 0.0);
        assert!(evaluate_at(&c, &s, &[0.5]).is_err());
    }

    #[test]
    fn rejects_bad_scores() {
        let c = corpus();
        assert!(evaluate(&c, &[vec![0.0; 200]]).is_err());
        assert!(evaluate(&c, &[vec![0.0; 200], vec![2.0; 200]]).is_err());
        assert!(evaluate(&c, &[vec![0.0; 200], vec![f64::NAN; 200]]).is_err());
    }
}
