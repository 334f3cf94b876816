//! Spectral trace detector in the spirit of SiPTA.
//!
//! Each event type's events are counted per time bin of `bin` nanoseconds; a
//! window of `window` bins (a power of two, hop `window / 2`) is a signal whose
//! magnitude spectrum (FFT, bins `0..=window/2`, scaled by `1 / window`) is
//! compared with the normal traces' spectra: the distance is the root mean
//! square, over frequencies, of the z-score against the normal mean and spread
//! at that frequency. Training also records the largest distance of any normal
//! window; online, a
//! window's score is its distance divided by that largest distance (per type),
//! so a score above `1 + slack` is an anomaly. State: `window` counts and the
//! reference spectrum per type, fixed by the model.

use super::Event;
use std::collections::BTreeMap;

/// Reference spectra for all event types.
#[derive(Debug, Clone, PartialEq)]
pub struct SpectralModel {
    bin: u64,
    window: usize,
    reference: BTreeMap<u16, Reference>,
}

/// Reference spectrum of one event type.
#[derive(Debug, Clone, PartialEq)]
struct Reference {
    mean: Vec<f64>,
    sd: Vec<f64>,
    /// Largest distance of a normal training window.
    bound: f64,
}

impl Reference {
    /// Root mean square of the per-frequency z-scores.
    fn distance(&self, s: &[f64]) -> f64 {
        let sum: f64 = s
            .iter()
            .zip(self.mean.iter().zip(&self.sd))
            .map(|(x, (m, d))| ((x - m) / d).powi(2))
            .sum();
        (sum / s.len() as f64).sqrt()
    }
}

impl SpectralModel {
    /// Learns mean spectra and normal distance bounds from normal traces.
    /// `window` is rounded up to a power of two (at least 8).
    pub fn learn(traces: &[&[Event]], bin: u64, window: usize) -> SpectralModel {
        let window = window.max(8).next_power_of_two();
        let bin = bin.max(1);
        let kinds: Vec<u16> = {
            let mut k: Vec<u16> = traces
                .iter()
                .flat_map(|t| t.iter().map(|e| e.kind))
                .collect();
            k.sort_unstable();
            k.dedup();
            k
        };
        let dft = Dft::new(window);
        let mut spectra: BTreeMap<u16, Vec<Vec<f64>>> = BTreeMap::new();
        for t in traces {
            for (kind, counts) in windows(t, &kinds, bin, window) {
                spectra
                    .entry(kind)
                    .or_default()
                    .push(dft.magnitudes(&counts));
            }
        }
        let mut reference = BTreeMap::new();
        for (kind, list) in spectra {
            let n = list.len() as f64;
            let mut mean = vec![0.0; window / 2 + 1];
            for s in &list {
                mean.iter_mut().zip(s).for_each(|(m, x)| *m += x / n);
            }
            let mut sd = vec![0.0; window / 2 + 1];
            for s in &list {
                sd.iter_mut()
                    .zip(s.iter().zip(&mean))
                    .for_each(|(d, (x, m))| *d += (x - m) * (x - m) / n);
            }
            // Floor each bin's spread at a tenth of the average spread, so a bin
            // that never moved in training does not make every change infinite.
            let avg = sd.iter().map(|v| v.sqrt()).sum::<f64>() / sd.len() as f64;
            let sd: Vec<f64> = sd
                .iter()
                .map(|v| v.sqrt().max(0.1 * avg).max(1e-12))
                .collect();
            let reference_kind = Reference {
                mean,
                sd,
                bound: 0.0,
            };
            let worst = list
                .iter()
                .map(|s| reference_kind.distance(s))
                .fold(0.0, f64::max);
            reference.insert(
                kind,
                Reference {
                    bound: worst.max(1e-9),
                    ..reference_kind
                },
            );
        }
        SpectralModel {
            bin,
            window,
            reference,
        }
    }
}

/// Online spectral monitor.
#[derive(Debug, Clone)]
pub struct SpectralMonitor {
    model: SpectralModel,
    dft: Dft,
    counts: BTreeMap<u16, Vec<f64>>,
    start: Option<u64>,
    filled: usize,
}

impl SpectralMonitor {
    /// A monitor for `model`.
    pub fn new(model: SpectralModel) -> SpectralMonitor {
        let counts = model
            .reference
            .keys()
            .map(|&k| (k, vec![0.0; model.window]))
            .collect();
        SpectralMonitor {
            dft: Dft::new(model.window),
            model,
            counts,
            start: None,
            filled: 0,
        }
    }

    /// Counts one event. Each completed window (every `window / 2` bins once
    /// the first is full) yields a score; returns the largest, with its type.
    /// Events of unknown types are ignored here (the arrival curves catch them).
    pub fn observe(&mut self, e: Event) -> Option<(u16, f64)> {
        let mut worst: Option<(u16, f64)> = None;
        let start = *self.start.get_or_insert(e.time);
        let mut start = start;
        // Close every bin (and window) that ends at or before this event.
        while e.time >= start + (self.filled as u64 + 1) * self.model.bin {
            self.filled += 1;
            if self.filled < self.model.window {
                continue;
            }
            for (&kind, counts) in &self.counts {
                let r = &self.model.reference[&kind];
                let s = r.distance(&self.dft.magnitudes(counts)) / r.bound;
                if worst.is_none_or(|w| s > w.1) {
                    worst = Some((kind, s));
                }
            }
            let half = self.model.window / 2;
            for counts in self.counts.values_mut() {
                counts.copy_within(half.., 0);
                counts[half..].iter_mut().for_each(|c| *c = 0.0);
            }
            self.filled = half;
            start += half as u64 * self.model.bin;
            self.start = Some(start);
        }
        if let Some(c) = self.counts.get_mut(&e.kind) {
            c[self.filled] += 1.0;
        }
        worst
    }

    /// Forgets the current window (the model stays).
    pub fn reset(&mut self) {
        self.counts
            .values_mut()
            .for_each(|c| c.iter_mut().for_each(|x| *x = 0.0));
        self.start = None;
        self.filled = 0;
    }
}

/// Count windows (hop `window / 2`) per kind of a whole trace, as the monitor
/// sees them.
fn windows(trace: &[Event], kinds: &[u16], bin: u64, window: usize) -> Vec<(u16, Vec<f64>)> {
    let Some(first) = trace.first() else {
        return Vec::new();
    };
    let last = trace.last().map_or(first.time, |e| e.time);
    let bins = ((last - first.time) / bin) as usize + 1;
    let mut series: BTreeMap<u16, Vec<f64>> = kinds.iter().map(|&k| (k, vec![0.0; bins])).collect();
    for e in trace {
        if let Some(s) = series.get_mut(&e.kind) {
            s[((e.time - first.time) / bin) as usize] += 1.0;
        }
    }
    let mut out = Vec::new();
    let half = window / 2;
    // Only windows that end before the last event's bin are complete.
    let mut at = 0;
    while at + window < bins {
        for (&k, s) in &series {
            out.push((k, s[at..at + window].to_vec()));
        }
        at += half;
    }
    out
}

/// Radix-2 FFT magnitudes with precomputed twiddles and bit reversal.
#[derive(Debug, Clone)]
struct Dft {
    n: usize,
    cos: Vec<f64>,
    sin: Vec<f64>,
    rev: Vec<usize>,
}

impl Dft {
    /// `n` must be a power of two.
    fn new(n: usize) -> Dft {
        let w = std::f64::consts::TAU / n as f64;
        let bits = n.trailing_zeros();
        let rev = (0..n)
            .map(|i| {
                if bits == 0 {
                    0
                } else {
                    i.reverse_bits() >> (usize::BITS - bits)
                }
            })
            .collect();
        Dft {
            n,
            cos: (0..n / 2).map(|i| (w * i as f64).cos()).collect(),
            sin: (0..n / 2).map(|i| (w * i as f64).sin()).collect(),
            rev,
        }
    }

    /// `|X[f]| / n` for `f = 0..=n/2`.
    fn magnitudes(&self, x: &[f64]) -> Vec<f64> {
        let n = self.n;
        let mut re: Vec<f64> = (0..n).map(|i| x[self.rev[i]]).collect();
        let mut im = vec![0.0; n];
        let mut len = 2;
        while len <= n {
            let step = n / len;
            for start in (0..n).step_by(len) {
                for k in 0..len / 2 {
                    let (c, s) = (self.cos[k * step], -self.sin[k * step]);
                    let (a, b) = (start + k, start + k + len / 2);
                    let (tr, ti) = (re[b] * c - im[b] * s, re[b] * s + im[b] * c);
                    re[b] = re[a] - tr;
                    im[b] = im[a] - ti;
                    re[a] += tr;
                    im[a] += ti;
                }
            }
            len *= 2;
        }
        (0..=n / 2)
            .map(|f| (re[f] * re[f] + im[f] * im[f]).sqrt() / n as f64)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fft_matches_a_direct_dft() {
        let n = 32;
        let x: Vec<f64> = (0..n).map(|i| ((i * 7) % 5) as f64).collect();
        let fast = Dft::new(n).magnitudes(&x);
        for (f, m) in fast.iter().enumerate() {
            let (mut re, mut im) = (0.0, 0.0);
            for (t, v) in x.iter().enumerate() {
                let a = std::f64::consts::TAU * (f * t) as f64 / n as f64;
                re += v * a.cos();
                im -= v * a.sin();
            }
            assert!(
                (m - (re * re + im * im).sqrt() / n as f64).abs() < 1e-9,
                "bin {f}"
            );
        }
    }

    #[test]
    fn dft_of_a_pulse_train() {
        let d = Dft::new(8);
        let m = d.magnitudes(&[1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]);
        assert!((m[0] - 0.5).abs() < 1e-12);
        assert!((m[4] - 0.5).abs() < 1e-12);
        assert!(m[1].abs() < 1e-12 && m[2].abs() < 1e-12);
    }

    #[test]
    fn reset_replays_identically() {
        let t: Vec<Event> = (0..3000)
            .map(|i| Event {
                time: i * 10 + (i % 7) * 3,
                kind: 1,
            })
            .collect();
        let model = SpectralModel::learn(&[t.as_slice()], 2, 64);
        let mut m = SpectralMonitor::new(model);
        let first: Vec<_> = t.iter().filter_map(|e| m.observe(*e)).collect();
        m.reset();
        let again: Vec<_> = t.iter().filter_map(|e| m.observe(*e)).collect();
        assert_eq!(first, again);
        assert!(!first.is_empty());
    }

    #[test]
    fn same_process_scores_low_and_a_new_period_high() {
        let periodic = |period: u64, n: u64| -> Vec<Event> {
            (0..n)
                .map(|i| Event {
                    time: i * period,
                    kind: 3,
                })
                .collect()
        };
        let normal = periodic(10, 2000);
        let model = SpectralModel::learn(&[normal.as_slice()], 2, 64);
        let mut m = SpectralMonitor::new(model.clone());
        let worst = normal
            .iter()
            .filter_map(|e| m.observe(*e))
            .map(|x| x.1)
            .fold(0.0, f64::max);
        assert!(worst <= 1.0 + 1e-9, "normal worst {worst}");
        let mut m = SpectralMonitor::new(model);
        let changed = periodic(14, 2000);
        let worst = changed
            .iter()
            .filter_map(|e| m.observe(*e))
            .map(|x| x.1)
            .fold(0.0, f64::max);
        assert!(worst > 2.0, "changed worst {worst}");
    }
}
