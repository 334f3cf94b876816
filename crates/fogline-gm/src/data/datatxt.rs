//! The Intel Lab `data.txt` format: one reading a line,
//! `date time epoch moteid temperature humidity light voltage`, separated by spaces, e.g.
//! `2004-02-28 00:59:16.02785 3 1 19.9884 37.0933 45.08 2.69964`.
//!
//! [`write`] renders a trace in it (light and voltage, which no function here uses, are written
//! as 0 and 2.7), and [`load`] reads it back, or the real file if it is ever supplied: epochs
//! are numbered from the smallest one seen for the chosen motes, later duplicates of a
//! (mote, epoch) replace earlier ones, lines that do not parse are counted and skipped, and
//! temperatures outside -10..60 C (the dying-battery readings of the real file) are dropped.

use std::io::{BufRead, Write};

use super::{Trace, EPOCH_MS};

/// (year, month, day) of the `days`-th day after 1970-01-01 (Hinnant's civil_from_days).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// 2004-02-28, the first day of the Intel Lab deployment, in days since 1970-01-01.
const START_DAY: i64 = 12_476;

/// Writes `trace` as data.txt lines; epoch `k` is `offset_s + 31 k` seconds after the start.
pub fn write(trace: &Trace, offset_s: u64, out: &mut impl Write) -> std::io::Result<()> {
    for k in 0..trace.epochs() {
        let ms = offset_s * 1000 + k as u64 * EPOCH_MS;
        let (y, mo, d) = civil(START_DAY + (ms / 86_400_000) as i64);
        let s = ms % 86_400_000;
        let (hh, mm, ss, frac) = (s / 3_600_000, s / 60_000 % 60, s / 1000 % 60, s % 1000);
        for (i, mote) in trace.motes.iter().enumerate() {
            let (Some(t), Some(h)) = (trace.temperature[k][i], trace.humidity[k][i]) else {
                continue;
            };
            writeln!(
                out,
                "{y:04}-{mo:02}-{d:02} {hh:02}:{mm:02}:{ss:02}.{frac:03} {k} {mote} {t:.4} {h:.4} 0 2.7"
            )?;
        }
    }
    Ok(())
}

/// What [`load`] skipped.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// lines that did not parse
    pub malformed: usize,
    /// temperatures outside -10..60 C
    pub implausible: usize,
}

/// Reads data.txt lines for `motes` (in that node order), at most `epochs` epochs.
///
/// # Errors
/// Only on a read error; bad lines are skipped and counted.
pub fn load(
    input: impl BufRead,
    motes: &[u32],
    epochs: usize,
) -> std::io::Result<(Trace, Skipped)> {
    let mut skipped = Skipped::default();
    let mut rows: Vec<(u64, usize, f64, Option<f64>)> = Vec::new();
    for line in input.lines() {
        let line = line?;
        let f: Vec<&str> = line.split_whitespace().collect();
        let parsed = (|| {
            let epoch: u64 = f.get(2)?.parse().ok()?;
            let mote: u32 = f.get(3)?.parse().ok()?;
            let t: f64 = f.get(4)?.parse().ok()?;
            let h: Option<f64> = f.get(5).and_then(|x| x.parse().ok());
            Some((epoch, mote, t, h))
        })();
        let Some((epoch, mote, t, h)) = parsed else {
            skipped.malformed += usize::from(!line.trim().is_empty());
            continue;
        };
        let Some(node) = motes.iter().position(|&m| m == mote) else {
            continue;
        };
        if !(-10.0..=60.0).contains(&t) {
            skipped.implausible += 1;
            continue;
        }
        rows.push((epoch, node, t, h));
    }
    let first = rows.iter().map(|r| r.0).min().unwrap_or(0);
    let n = motes.len();
    let mut temperature = vec![vec![None; n]; epochs];
    let mut humidity = vec![vec![None; n]; epochs];
    for (epoch, node, t, h) in rows {
        let k = (epoch - first) as usize;
        if k < epochs {
            temperature[k][node] = Some(t);
            humidity[k][node] = h;
        }
    }
    let last = temperature
        .iter()
        .rposition(|r| r.iter().any(Option::is_some))
        .map_or(0, |k| k + 1);
    temperature.truncate(last);
    humidity.truncate(last);
    Ok((
        Trace {
            motes: motes.to_vec(),
            temperature,
            humidity,
        },
        skipped,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::parametric::parametric;

    #[test]
    fn dates_are_civil() {
        assert_eq!(civil(START_DAY), (2004, 2, 28));
        assert_eq!(civil(START_DAY + 1), (2004, 2, 29));
        assert_eq!(civil(START_DAY + 2), (2004, 3, 1));
    }

    #[test]
    fn a_written_trace_loads_back() {
        let trace = parametric(5, 22, 300, 9);
        let mut buf = Vec::new();
        write(&trace, 0, &mut buf).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert!(
            text.starts_with("2004-02-28 00:00:00.000 0 22 "),
            "{}",
            &text[..60]
        );
        let junk = b"garbage line\n2004-02-28 00:00:00.000 1 23 122.1 1 0 2\n";
        buf.extend_from_slice(junk);
        let (back, skipped) = load(&buf[..], &trace.motes, 1000).unwrap();
        assert_eq!(
            skipped,
            Skipped {
                malformed: 1,
                implausible: 1
            }
        );
        assert_eq!(back.motes, trace.motes);
        assert_eq!(back.epochs(), trace.epochs());
        for k in 0..trace.epochs() {
            for i in 0..5 {
                let (a, b) = (trace.temperature[k][i], back.temperature[k][i]);
                assert_eq!(a.is_some(), b.is_some());
                if let (Some(a), Some(b)) = (a, b) {
                    assert!((a - b).abs() < 1e-9);
                }
            }
        }
    }
}
