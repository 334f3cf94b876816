//! Stage 2: the weight each row would earn if it were a detection.
//!
//! NAB's rules, per file of `n` rows scanned in file order:
//! - rows `i < min(floor(0.15 n), 0.15 * 5000)` are probationary and never scored;
//! - a window is entered at the first row whose timestamp equals its start (windows
//!   are taken in label order) and left after the row whose timestamp equals its
//!   end; its width `W` counts rows from the first row with the start timestamp to
//!   the first row with the end timestamp, inclusive;
//! - a row `i` inside a window with right edge `R` is worth
//!   `tp * S(-(R - i + 1) / W) / S(-1)`, so the window's first row earns exactly `tp`;
//! - a row outside windows is worth `fp * S(|R' - i| / (W' - 1))` after a window
//!   with right edge `R'` and width `W'`, and `-fp` before any window;
//! - `S(x) = 2 / (1 + e^(5x)) - 1` for `x <= 3`, else `-1` (the scaled sigmoid).

use super::corpus::{DataFile, Profile};

/// A scorable row: its detector score and what detecting it is worth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// Detector's anomaly score for the row.
    pub score: f64,
    /// Weighted NAB score if this row is a detection.
    pub weight: f64,
    /// Corpus-wide window index, `None` outside windows.
    pub window: Option<u32>,
}

/// NAB's scaled sigmoid of a relative position.
///
/// # Example
/// ```
/// use fogline_detect::nab::sweep::scaled_sigmoid;
/// assert!((scaled_sigmoid(-1.0) - 0.98661).abs() < 1e-5);
/// assert_eq!(scaled_sigmoid(0.0), 0.0);
/// assert_eq!(scaled_sigmoid(3.5), -1.0);
/// ```
pub fn scaled_sigmoid(x: f64) -> f64 {
    if x > 3.0 {
        -1.0
    } else {
        2.0 / (1.0 + (5.0 * x).exp()) - 1.0
    }
}

/// Number of probationary rows in a file of `n` rows (compare as `i >= len`).
pub fn probation_len(n: usize) -> f64 {
    (0.15 * n as f64).floor().min(0.15 * 5000.0)
}

/// Appends the scorable rows of `file` (scores in `scores`, one per row) to `out`.
/// The file's windows get indices `first_window..first_window + windows.len()`.
///
/// # Panics
/// If `scores.len() != file.values.len()` (a caller bug, not an input error).
pub fn sweep_file(
    file: &DataFile,
    scores: &[f64],
    profile: &Profile,
    first_window: u32,
    out: &mut Vec<Row>,
) {
    assert_eq!(scores.len(), file.values.len(), "one score per row");
    let ts = &file.timestamps;
    let first_index = |t: i64| ts.iter().position(|&x| x == t).unwrap_or(0) as f64;
    let max_tp = scaled_sigmoid(-1.0);
    let probation = probation_len(ts.len());
    let mut next = 0usize;
    // (end timestamp, right index, width, window id)
    let mut cur: Option<(i64, f64, f64, u32)> = None;
    let mut prev: Option<(f64, f64)> = None;
    for (i, (&t, &score)) in ts.iter().zip(scores).enumerate() {
        let fi = i as f64;
        if let Some(&(start, end)) = file.windows.get(next) {
            if t == start {
                let right = first_index(end);
                let width = right - first_index(start) + 1.0;
                cur = Some((end, right, width, first_window + next as u32));
                next += 1;
            }
        }
        let (weight, window) = match cur {
            Some((_, right, width, id)) => (
                scaled_sigmoid(-(right - fi + 1.0) / width) * profile.tp / max_tp,
                Some(id),
            ),
            None => {
                let s = match prev {
                    None => -1.0,
                    Some((right, width)) => scaled_sigmoid((right - fi).abs() / (width - 1.0)),
                };
                (s * profile.fp, None)
            }
        };
        if fi >= probation {
            out.push(Row {
                score,
                weight,
                window,
            });
        }
        if let Some((end, _, width, _)) = cur {
            if t == end {
                prev = Some((fi, width));
                cur = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> Profile {
        Profile {
            name: "standard".into(),
            tp: 1.0,
            fn_: 1.0,
            fp: 0.11,
        }
    }

    fn file(n: usize, windows: Vec<(i64, i64)>) -> DataFile {
        DataFile {
            path: "t.csv".into(),
            timestamps: (0..n as i64).collect(),
            values: vec![0.0; n],
            windows,
        }
    }

    #[test]
    fn probation_rule() {
        assert_eq!(probation_len(100), 15.0);
        assert_eq!(probation_len(4032), 604.0);
        assert_eq!(probation_len(22_695), 750.0);
    }

    #[test]
    fn window_weights() {
        // 100 rows, probation 15, window rows 50..=59 (width 10).
        let f = file(100, vec![(50, 59)]);
        let mut rows = Vec::new();
        sweep_file(&f, &[0.0; 100], &profile(), 7, &mut rows);
        assert_eq!(rows.len(), 85);
        let at = |i: usize| rows[i - 15];
        assert_eq!(at(20).weight, -0.11);
        assert_eq!(at(20).window, None);
        assert!((at(50).weight - 1.0).abs() < 1e-12);
        assert_eq!(at(50).window, Some(7));
        assert!((at(59).weight - scaled_sigmoid(-0.1) / scaled_sigmoid(-1.0)).abs() < 1e-12);
        // One row past the right edge: |59 - 60| / 9.
        assert!((at(60).weight - 0.11 * scaled_sigmoid(1.0 / 9.0)).abs() < 1e-12);
        assert_eq!(at(60).window, None);
        // Far past the window: S > 3 -> -1.
        assert_eq!(at(99).weight, -0.11);
    }
}
