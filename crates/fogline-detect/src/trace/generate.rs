//! Synthetic traces: periodic tasks with release jitter plus one sporadic
//! source, and the four anomalies the detectors must catch, injected into one
//! interval of a trace.
//!
//! A periodic task of period `P`, jitter `J` and phase `F` emits its `j`-th event
//! at `F + j P + U(-J, J)`; the sporadic source emits with gaps `G + Exp(M)`
//! (minimum gap `G`, mean extra gap `M`). Traces are sorted by time.

use super::Event;

/// A periodic event source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Task {
    /// Event type emitted.
    pub kind: u16,
    /// Period, ns.
    pub period: u64,
    /// Release jitter bound, ns.
    pub jitter: u64,
    /// Offset of the first event, ns.
    pub phase: u64,
}

/// What a trace looks like when normal.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    /// Periodic sources.
    pub tasks: Vec<Task>,
    /// Sporadic source: type, minimum gap (ns), mean extra gap (ns).
    pub sporadic: Option<(u16, u64, u64)>,
    /// Trace length, ns.
    pub duration: u64,
}

impl Default for Spec {
    /// Five tasks (10, 20, 25, 50, 100 ms; jitter 5 % of the period) and a
    /// sporadic source (gap at least 5 ms, mean 35 ms), over 20 s.
    fn default() -> Spec {
        let ms = 1_000_000;
        let tasks = [(1, 10), (2, 20), (3, 25), (4, 50), (5, 100)]
            .into_iter()
            .map(|(kind, p)| Task {
                kind,
                period: p * ms,
                jitter: p * ms / 20,
                phase: kind as u64 * ms,
            })
            .collect();
        Spec {
            tasks,
            sporadic: Some((6, 5 * ms, 30 * ms)),
            duration: 20_000 * ms,
        }
    }
}

/// The injected anomaly types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anomaly {
    /// Three extra events of one type at random times in the interval.
    Extra,
    /// Two consecutive events of one type dropped in the interval.
    Missing,
    /// One type's jitter raised to 30 % of its period in the interval.
    Jitter,
    /// One type's period lengthened by 10 % in the interval.
    Period,
}

impl Anomaly {
    /// All four, in report order.
    pub const ALL: [Anomaly; 4] = [
        Anomaly::Extra,
        Anomaly::Missing,
        Anomaly::Jitter,
        Anomaly::Period,
    ];

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Anomaly::Extra => "extra events",
            Anomaly::Missing => "missing events",
            Anomaly::Jitter => "timing jitter",
            Anomaly::Period => "changed period",
        }
    }
}

/// A deterministic generator (xorshift64*), so runs are reproducible.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeded generator (seed 0 is replaced by a constant).
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        })
    }

    /// Uniform in `[0, 1)`.
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.uniform() * n as f64) as u64).min(n.saturating_sub(1))
    }
}

/// A normal trace of `spec`.
pub fn normal(spec: &Spec, rng: &mut Rng) -> Vec<Event> {
    generate(spec, rng, None)
}

/// A trace of `spec` with `anomaly` injected into `[start, end)` ns, on a task
/// chosen at random (for `Extra`, any type including the sporadic one).
pub fn anomalous(spec: &Spec, rng: &mut Rng, anomaly: Anomaly, start: u64, end: u64) -> Vec<Event> {
    generate(spec, rng, Some((anomaly, start, end)))
}

fn generate(spec: &Spec, rng: &mut Rng, inject: Option<(Anomaly, u64, u64)>) -> Vec<Event> {
    let mut out = Vec::new();
    let victim = if spec.tasks.is_empty() {
        0
    } else {
        rng.below(spec.tasks.len() as u64) as usize
    };
    for (ti, task) in spec.tasks.iter().enumerate() {
        let mut nominal = task.phase;
        let mut dropped = 0;
        while nominal < spec.duration {
            let mut jitter = task.jitter;
            let mut period = task.period;
            let mut keep = true;
            if let Some((a, s, e)) = inject {
                if ti == victim && nominal >= s && nominal < e {
                    match a {
                        Anomaly::Jitter => jitter = task.period * 3 / 10,
                        Anomaly::Period => period = task.period + task.period / 10,
                        Anomaly::Missing if dropped < 2 => {
                            keep = false;
                            dropped += 1;
                        }
                        _ => {}
                    }
                }
            }
            let offset = (rng.uniform() * 2.0 - 1.0) * jitter as f64;
            let t = (nominal as f64 + offset).max(0.0) as u64;
            if keep {
                out.push(Event {
                    time: t,
                    kind: task.kind,
                });
            }
            nominal += period;
        }
    }
    if let Some((kind, min_gap, mean)) = spec.sporadic {
        let mut t = 0u64;
        loop {
            let extra = -(1.0 - rng.uniform()).ln() * mean as f64;
            t += min_gap + extra as u64;
            if t >= spec.duration {
                break;
            }
            out.push(Event { time: t, kind });
        }
    }
    if let Some((Anomaly::Extra, s, e)) = inject {
        let kinds: Vec<u16> = spec
            .tasks
            .iter()
            .map(|t| t.kind)
            .chain(spec.sporadic.map(|s| s.0))
            .collect();
        let kind = kinds[rng.below(kinds.len() as u64) as usize];
        for _ in 0..3 {
            out.push(Event {
                time: s + rng.below(e.saturating_sub(s).max(1)),
                kind,
            });
        }
    }
    out.sort_by_key(|e| e.time);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_trace_has_expected_counts_and_order() {
        let spec = Spec::default();
        let t = normal(&spec, &mut Rng::new(1));
        assert!(t.windows(2).all(|w| w[0].time <= w[1].time));
        let count = |k: u16| t.iter().filter(|e| e.kind == k).count();
        assert_eq!(count(1), 2000);
        assert_eq!(count(5), 200);
        assert!((400..=700).contains(&count(6)), "sporadic {}", count(6));
    }

    #[test]
    fn injections_change_the_trace() {
        let spec = Spec::default();
        let base = normal(&spec, &mut Rng::new(9)).len();
        let extra = anomalous(
            &spec,
            &mut Rng::new(9),
            Anomaly::Extra,
            5_000_000_000,
            6_000_000_000,
        );
        let missing = anomalous(
            &spec,
            &mut Rng::new(9),
            Anomaly::Missing,
            5_000_000_000,
            6_000_000_000,
        );
        assert_eq!(extra.len(), base + 3);
        assert_eq!(missing.len(), base - 2);
    }
}
