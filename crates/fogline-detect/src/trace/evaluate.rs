//! Detection and false-positive rates of the trace detectors on generated
//! traces.
//!
//! Both detectors learn from `train` normal traces. Then each is run on
//! `normal` fresh normal traces (a trace with any alarm is a false positive) and
//! on `per_anomaly` traces per anomaly type, the anomaly injected into the
//! middle tenth of the trace (a trace with an alarm within `grace` ns of that
//! interval is detected: jitter can move an event before the interval, and
//! spans of up to `max_k` events reach past its end; alarms elsewhere in
//! anomalous traces are counted as false alarms).

use super::arrival::{ArrivalCurves, ArrivalMonitor};
use super::generate::{anomalous, normal, Anomaly, Rng, Spec};
use super::spectral::{SpectralModel, SpectralMonitor};
use super::Event;
use std::time::Instant;

/// Experiment settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Trace shape.
    pub spec: Spec,
    /// Normal traces to learn from.
    pub train: usize,
    /// Normal test traces.
    pub normal: usize,
    /// Test traces per anomaly type.
    pub per_anomaly: usize,
    /// Seed of the generator.
    pub seed: u64,
    /// Longest run of events in the arrival curves.
    pub max_k: usize,
    /// Relative slack of the arrival-curve bounds.
    pub arrival_slack: f64,
    /// Spectral bin, ns.
    pub bin: u64,
    /// Spectral window, bins.
    pub window: usize,
    /// A spectral score above `1 + spectral_slack` is an alarm.
    pub spectral_slack: f64,
    /// Time around the anomaly interval within which an alarm still counts, ns.
    pub grace: u64,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            spec: Spec::default(),
            train: 50,
            normal: 50,
            per_anomaly: 50,
            seed: 2016,
            max_k: 8,
            arrival_slack: 0.02,
            bin: 1_000_000,
            window: 512,
            spectral_slack: 0.05,
            grace: 1_000_000_000,
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Row {
    /// `arrival-curves` or `spectral`.
    pub detector: &'static str,
    /// `normal` or an anomaly name.
    pub case: &'static str,
    /// Traces with an alarm in the anomaly interval (normal: anywhere).
    pub flagged: usize,
    /// Traces run.
    pub total: usize,
    /// Anomalous traces with an alarm outside the interval.
    pub false_alarms: usize,
    /// Mean monitor cost per event, ns.
    pub ns_per_event: f64,
}

/// Runs the experiment.
pub fn run(cfg: &Config) -> Vec<Row> {
    let mut rng = Rng::new(cfg.seed);
    let training: Vec<Vec<Event>> = (0..cfg.train)
        .map(|_| normal(&cfg.spec, &mut rng))
        .collect();
    let refs: Vec<&[Event]> = training.iter().map(Vec::as_slice).collect();
    let curves = ArrivalCurves::learn(refs.iter().copied(), cfg.max_k);
    let model = SpectralModel::learn(&refs, cfg.bin, cfg.window);
    let (s, e) = (cfg.spec.duration * 45 / 100, cfg.spec.duration * 55 / 100);
    let mut cases: Vec<(&'static str, Vec<Vec<Event>>)> = vec![(
        "normal",
        (0..cfg.normal)
            .map(|_| normal(&cfg.spec, &mut rng))
            .collect(),
    )];
    for a in Anomaly::ALL {
        cases.push((
            a.name(),
            (0..cfg.per_anomaly)
                .map(|_| anomalous(&cfg.spec, &mut rng, a, s, e))
                .collect(),
        ));
    }
    let mut rows = Vec::new();
    for (case, traces) in &cases {
        let window = if *case == "normal" {
            (0, u64::MAX)
        } else {
            (s.saturating_sub(cfg.grace), e + cfg.grace)
        };
        let mut arrival = Tally::default();
        let mut spectral = Tally::default();
        for t in traces {
            let mut m = ArrivalMonitor::new(curves.clone(), cfg.arrival_slack);
            let start = Instant::now();
            let alarms: Vec<u64> = t
                .iter()
                .filter_map(|ev| m.observe(*ev).map(|_| ev.time))
                .collect();
            arrival.add(&alarms, window, start.elapsed().as_nanos(), t.len());
            let mut m = SpectralMonitor::new(model.clone());
            let start = Instant::now();
            let threshold = 1.0 + cfg.spectral_slack;
            let alarms: Vec<u64> = t
                .iter()
                .filter_map(|ev| m.observe(*ev).filter(|x| x.1 > threshold).map(|_| ev.time))
                .collect();
            spectral.add(&alarms, window, start.elapsed().as_nanos(), t.len());
        }
        rows.push(arrival.row("arrival-curves", case));
        rows.push(spectral.row("spectral", case));
    }
    rows
}

#[derive(Default)]
struct Tally {
    flagged: usize,
    total: usize,
    false_alarms: usize,
    nanos: u128,
    events: usize,
}

impl Tally {
    fn add(&mut self, alarms: &[u64], (s, e): (u64, u64), nanos: u128, events: usize) {
        self.total += 1;
        self.nanos += nanos;
        self.events += events;
        if alarms.iter().any(|&t| t >= s && t <= e) {
            self.flagged += 1;
        }
        if alarms.iter().any(|&t| t < s || t > e) {
            self.false_alarms += 1;
        }
    }

    fn row(&self, detector: &'static str, case: &'static str) -> Row {
        Row {
            detector,
            case,
            flagged: self.flagged,
            total: self.total,
            false_alarms: self.false_alarms,
            ns_per_event: self.nanos as f64 / self.events.max(1) as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_run_detects_more_than_it_false_alarms() {
        let ms = 1_000_000;
        let cfg = Config {
            spec: Spec {
                duration: 4_000 * ms,
                ..Spec::default()
            },
            train: 6,
            normal: 6,
            per_anomaly: 6,
            window: 256,
            grace: 500 * ms,
            ..Config::default()
        };
        let rows = run(&cfg);
        assert_eq!(rows.len(), 10);
        let get = |d: &str, c: &str| {
            rows.iter()
                .find(|r| r.detector == d && r.case == c)
                .unwrap()
        };
        // Arrival curves see every missing pair and every lengthened period.
        assert_eq!(get("arrival-curves", "missing events").flagged, 6);
        assert_eq!(get("arrival-curves", "changed period").flagged, 6);
        for d in ["arrival-curves", "spectral"] {
            let fp = get(d, "normal").flagged;
            let det: usize = Anomaly::ALL.iter().map(|a| get(d, a.name()).flagged).sum();
            assert!(det > 4 * fp, "{d}: detected {det}, false positives {fp}");
        }
    }
}
