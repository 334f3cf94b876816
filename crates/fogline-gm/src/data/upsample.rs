//! The half-hourly Intel Lab extract (`shared/data/intel-lab/intel{Temperature,Humidity}
//! {Train,Test}.csv`: 50 rows, 240 half-hour columns, 5 days) brought to 31 s epochs.
//!
//! Noise model: between two half-hour values the reading follows the straight line, plus a
//! per-mote AR(1) deviation `x_k = 0.95 x_(k-1) + s e_k` with a stationary standard deviation
//! of `noise` C for temperature (0.05 C by default: the order of the Intel Lab sensors'
//! short-term jitter) and 4 `noise` %RH for humidity, rounded to 0.01 as the raw readings
//! are. The half-hour values are themselves smooth, so the sub-half-hour dynamics of the
//! real lab (air handling, people, sun) are only as rough as this noise makes them. Column `j` is the time
//! `0.5 (j + 1)` hours after the first midnight, so epoch 0 is at 00:30 of day 1.
//!
//! The rows are not mote ids (the course that made the extract renumbered them), so the rows
//! the thesis' motes 22-47 would be are unknown: by default rows 22-47 stand in for them.

use std::path::Path;

use super::{Trace, EPOCH_MS};
use crate::rng::Rng;

const HALF_HOUR_S: f64 = 1800.0;
const PHI: f64 = 0.95;

fn read_matrix(path: &Path) -> Result<Vec<Vec<f64>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.trim()
                .split(',')
                .map(|x| {
                    x.trim()
                        .parse::<f64>()
                        .map_err(|e| format!("{}: {x:?}: {e}", path.display()))
                })
                .collect()
        })
        .collect()
}

fn read_both(dir: &Path, what: &str) -> Result<Vec<Vec<f64>>, String> {
    let train = read_matrix(&dir.join(format!("intel{what}Train.csv")))?;
    let test = read_matrix(&dir.join(format!("intel{what}Test.csv")))?;
    if train.len() != test.len() {
        return Err(format!("{what}: train and test have different row counts"));
    }
    Ok(train
        .into_iter()
        .zip(test)
        .map(|(mut a, b)| {
            a.extend(b);
            a
        })
        .collect())
}

/// Upsamples `rows` of the extract in `dir` to `epochs` 31-second epochs, with temperature
/// noise `noise` (C, stationary sd).
///
/// # Errors
/// A missing or malformed file, a row out of range, or more epochs than the extract covers.
pub fn upsample(
    dir: &Path,
    rows: std::ops::Range<usize>,
    epochs: usize,
    noise: f64,
    seed: u64,
) -> Result<Trace, String> {
    let temp = read_both(dir, "Temperature")?;
    let hum = read_both(dir, "Humidity")?;
    if rows.end > temp.len() || rows.end > hum.len() {
        return Err(format!(
            "rows {rows:?} out of range: the extract has {}",
            temp.len()
        ));
    }
    let cols = temp[rows.start].len();
    let span_s = (cols - 1) as f64 * HALF_HOUR_S;
    if (epochs.saturating_sub(1) as f64) * EPOCH_MS as f64 / 1000.0 > span_s {
        return Err(format!(
            "{epochs} epochs is more than the extract's {} h",
            span_s / 3600.0
        ));
    }
    let mut rng = Rng::new(seed);
    let motes: Vec<u32> = rows.clone().map(|r| r as u32).collect();
    let mut temperature = vec![Vec::with_capacity(motes.len()); epochs];
    let mut humidity = vec![Vec::with_capacity(motes.len()); epochs];
    for r in rows {
        let mut dev = [0.0f64; 2];
        let sd = [noise, 4.0 * noise];
        let mut node_rng = rng.fork(r as u64);
        for k in 0..epochs {
            let s = k as f64 * EPOCH_MS as f64 / 1000.0 / HALF_HOUR_S;
            let j = (s.floor() as usize).min(cols - 2);
            let w = s - j as f64;
            for (c, m) in [&temp, &hum].into_iter().enumerate() {
                dev[c] = PHI * dev[c] + sd[c] * (1.0 - PHI * PHI).sqrt() * node_rng.normal();
                let x = m[r][j] * (1.0 - w) + m[r][j + 1] * w + dev[c];
                let x = (x * 100.0).round() / 100.0;
                if c == 0 {
                    temperature[k].push(Some(x));
                } else {
                    humidity[k].push(Some(x));
                }
            }
        }
    }
    Ok(Trace {
        motes,
        temperature,
        humidity,
    })
}
