//! Stage 3: score every threshold at once and pick the best.
//!
//! A row is a detection at threshold `T` when its score is `>= T`. At a given
//! threshold the corpus score is the sum of the weights of detected rows outside
//! windows, plus, per window with at least one scorable row, the largest weight
//! of its detected rows (its earliest detection, as weights fall across a
//! window), or `-fn` if none is detected. Sorting rows by score, high to low,
//! yields the score at every distinct threshold in one pass.

use super::sweep::Row;
use std::collections::HashMap;

/// The corpus score at one threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThresholdScore {
    /// Rows scoring `>= threshold` are detections.
    pub threshold: f64,
    /// Raw NAB score.
    pub score: f64,
    /// Windows with at least one detection.
    pub windows_detected: usize,
    /// Detections outside windows.
    pub false_positives: usize,
}

/// Scores at every distinct threshold, from 1.1 (nothing detected) down to the
/// lowest score in `rows`. `rows` is reordered.
pub fn scores_by_threshold(rows: &mut [Row], fn_weight: f64) -> Vec<ThresholdScore> {
    rows.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut parts: HashMap<u32, f64> = HashMap::new();
    for r in rows.iter() {
        if let Some(w) = r.window {
            parts.insert(w, -fn_weight);
        }
    }
    let mut fp_sum = 0.0;
    let mut window_sum: f64 = -fn_weight * parts.len() as f64;
    let mut cur = ThresholdScore {
        threshold: 1.1,
        score: fp_sum + window_sum,
        windows_detected: 0,
        false_positives: 0,
    };
    let mut out = Vec::new();
    for r in rows.iter() {
        if r.score != cur.threshold {
            cur.score = fp_sum + window_sum;
            out.push(cur);
            cur.threshold = r.score;
        }
        match r.window {
            None => {
                fp_sum += r.weight;
                cur.false_positives += 1;
            }
            Some(w) => {
                let part = parts.entry(w).or_insert(-fn_weight);
                if *part == -fn_weight && r.weight > *part {
                    cur.windows_detected += 1;
                }
                if r.weight > *part {
                    window_sum += r.weight - *part;
                    *part = r.weight;
                }
            }
        }
    }
    cur.score = fp_sum + window_sum;
    out.push(cur);
    out
}

/// The threshold with the highest score; on ties the highest threshold.
pub fn best(scores: &[ThresholdScore]) -> ThresholdScore {
    let mut best = scores.first().copied().unwrap_or(ThresholdScore {
        threshold: 1.1,
        score: 0.0,
        windows_detected: 0,
        false_positives: 0,
    });
    for s in scores {
        if s.score > best.score {
            best = *s;
        }
    }
    best
}

/// The score at a given threshold `t`: the entry of [`scores_by_threshold`]'s
/// output that counts exactly the rows scoring `>= t`.
pub fn at(scores: &[ThresholdScore], t: f64) -> ThresholdScore {
    let mut pick = scores.first().copied().unwrap_or(ThresholdScore {
        threshold: 1.1,
        score: 0.0,
        windows_detected: 0,
        false_positives: 0,
    });
    for s in scores {
        if s.threshold >= t {
            pick = *s;
        }
    }
    pick
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(score: f64, weight: f64, window: Option<u32>) -> Row {
        Row {
            score,
            weight,
            window,
        }
    }

    #[test]
    fn hand_made() {
        // Two windows, one FP candidate.
        let mut rows = vec![
            row(0.9, 1.0, Some(0)),  // early in window 0
            row(0.95, 0.5, Some(0)), // late in window 0, higher score
            row(0.8, -0.11, None),
            row(0.2, 0.7, Some(1)),
        ];
        let s = scores_by_threshold(&mut rows, 1.0);
        let exact = |t: f64| s.iter().find(|x| x.threshold == t).unwrap().score;
        assert_eq!(exact(1.1), -2.0);
        assert!((exact(0.95) - (0.5 - 1.0)).abs() < 1e-12);
        assert!((exact(0.9) - (1.0 - 1.0)).abs() < 1e-12);
        assert!((exact(0.8) - (1.0 - 1.0 - 0.11)).abs() < 1e-12);
        assert!((exact(0.2) - (1.0 + 0.7 - 0.11)).abs() < 1e-12);
        assert_eq!(at(&s, 0.85).score, at(&s, 0.9).score);
        assert_eq!(at(&s, 0.1).threshold, 0.2);
        assert_eq!(at(&s, 2.0).threshold, 1.1);
        let b = best(&s);
        assert_eq!(b.threshold, 0.2);
        assert_eq!(b.windows_detected, 2);
        assert_eq!(b.false_positives, 1);
    }

    #[test]
    fn ties_share_a_threshold() {
        let mut rows = vec![row(0.5, -0.11, None), row(0.5, 1.0, Some(3))];
        let s = scores_by_threshold(&mut rows, 2.0);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].score, -2.0);
        assert!((s[1].score - 0.89).abs() < 1e-12);
        // Best keeps the higher threshold on a tie.
        let b = best(&[
            s[0],
            ThresholdScore {
                threshold: 0.1,
                ..s[0]
            },
        ]);
        assert_eq!(b.threshold, s[0].threshold);
    }
}
