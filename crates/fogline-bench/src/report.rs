//! Reports: the raw JSON, a Markdown summary with the ratios fogline / each peer, and (with
//! the `plots` feature) SVG and PNG plots, all in one folder.
//!
//! Repetitions of a cell are summarised by their median. Each cell has one headline metric:
//! delivered messages per second for maximum-rate, replay and producer-only cells (higher is
//! better), p50 latency otherwise (lower is better). Ratios are always fogline's value
//! divided by the peer's, so > 1 is better for throughput and < 1 is better for latency.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::cell::{CellResult, CellSpec, Rate, Reading};
use crate::harness::RunReport;
use crate::interval::{self, Verdict};
use crate::system::System;

/// What a cell is judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Delivered (or, producer alone, acknowledged) messages per second.
    Throughput,
    /// Median latency in microseconds.
    LatencyP50,
}

impl Metric {
    /// The headline metric of a cell.
    pub fn of(c: &CellSpec) -> Metric {
        if c.rate == Rate::Max || c.reading == Reading::Replay || c.subscribers == 0 {
            Metric::Throughput
        } else {
            Metric::LatencyP50
        }
    }

    /// Column title.
    pub fn title(self) -> &'static str {
        match self {
            Metric::Throughput => "msg/s (higher is better)",
            Metric::LatencyP50 => "p50 us (lower is better)",
        }
    }

    fn better(self, a: f64, b: f64) -> bool {
        match self {
            Metric::Throughput => a > b,
            Metric::LatencyP50 => a < b,
        }
    }
}

/// The median over repetitions of one system in one cell.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// System name.
    pub system: String,
    /// Cell label.
    pub cell: String,
    /// Repetitions summarised.
    pub runs: usize,
    /// Delivered msg/s.
    pub throughput_msgs: f64,
    /// Delivered MB/s.
    pub throughput_mbps: f64,
    /// p50 latency, us.
    pub p50_us: f64,
    /// p99 latency, us.
    pub p99_us: f64,
    /// Lost / expected over all runs, percent.
    pub loss_pct: f64,
    /// Duplicates over all runs.
    pub duplicates: u64,
    /// Reordered arrivals over all runs.
    pub reordered: u64,
    /// Server CPU, percent of one core (median).
    pub cpu_pct: Option<f64>,
    /// Server peak RSS, MiB (max).
    pub rss_mib: Option<f64>,
    /// Its peak anonymous part (heap and stacks, not mapped files), MiB (max), where sampled.
    pub anon_mib: Option<f64>,
    /// Server disk bytes written (median).
    pub disk_bytes: Option<u64>,
    /// Bytes the loopback interface carried, each counted once (median): the traffic between
    /// load and server. [`crate::procstat`] records received + sent, which counts them twice.
    pub loopback_bytes: Option<u64>,
    /// Largest other-processes CPU (percent of a core) and steal (percent) seen in a run of
    /// this cell (see [`crate::quiet`]), if recorded.
    pub noise_max: Option<(f64, f64)>,
    /// First error seen, if any.
    pub error: Option<String>,
    /// Each repetition's p50, us (for the ratios' intervals).
    #[serde(skip)]
    pub p50_runs: Vec<f64>,
    /// Each repetition's delivered msg/s.
    #[serde(skip)]
    pub throughput_runs: Vec<f64>,
}

impl Summary {
    /// The value of `m`.
    pub fn value(&self, m: Metric) -> f64 {
        match m {
            Metric::Throughput => self.throughput_msgs,
            Metric::LatencyP50 => self.p50_us,
        }
    }

    /// The value of `m` in each repetition.
    pub fn runs(&self, m: Metric) -> &[f64] {
        match m {
            Metric::Throughput => &self.throughput_runs,
            Metric::LatencyP50 => &self.p50_runs,
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    interval::median_in_place(&mut v)
}

/// The median of the figures the runs recorded, or None when none did.
fn median_of(v: impl Iterator<Item = f64>) -> Option<f64> {
    let v: Vec<f64> = v.collect();
    (!v.is_empty()).then(|| median(v))
}

/// Summaries by cell (in run order), then by system (in run order).
pub fn summarise(results: &[CellResult]) -> Vec<(CellSpec, Vec<Summary>)> {
    let mut cells: Vec<(CellSpec, BTreeMap<usize, Vec<&CellResult>>)> = Vec::new();
    let mut sys_order: Vec<String> = Vec::new();
    for r in results {
        if !sys_order.contains(&r.system) {
            sys_order.push(r.system.clone());
        }
        let si = sys_order.iter().position(|s| *s == r.system).unwrap_or(0);
        let ci = match cells.iter().position(|(c, _)| c.label == r.spec.label) {
            Some(i) => i,
            None => {
                cells.push((r.spec.clone(), BTreeMap::new()));
                cells.len() - 1
            }
        };
        cells[ci].1.entry(si).or_default().push(r);
    }
    cells
        .into_iter()
        .map(|(spec, by_sys)| {
            let sums = by_sys
                .into_values()
                .map(|rs| {
                    let f =
                        |g: &dyn Fn(&CellResult) -> f64| median(rs.iter().map(|r| g(r)).collect());
                    let expected: u64 = rs.iter().map(|r| r.delivery.expected).sum();
                    let lost: u64 = rs.iter().map(|r| r.delivery.lost).sum();
                    let servers: Vec<_> = rs.iter().filter_map(|r| r.server).collect();
                    Summary {
                        system: rs[0].system.clone(),
                        cell: spec.label.clone(),
                        runs: rs.len(),
                        throughput_msgs: f(&|r| r.throughput_msgs),
                        throughput_mbps: f(&|r| r.throughput_mbps),
                        p50_us: f(&|r| r.latency.p50_us),
                        p99_us: f(&|r| r.latency.p99_us),
                        loss_pct: if expected > 0 {
                            100.0 * lost as f64 / expected as f64
                        } else {
                            0.0
                        },
                        duplicates: rs.iter().map(|r| r.delivery.duplicates).sum(),
                        reordered: rs.iter().map(|r| r.delivery.reordered).sum(),
                        cpu_pct: median_of(servers.iter().map(|s| s.cpu_percent)),
                        rss_mib: servers.iter().map(|s| s.rss_max_mib).reduce(f64::max),
                        anon_mib: servers
                            .iter()
                            .filter_map(|s| s.anon_max_mib)
                            .reduce(f64::max),
                        disk_bytes: median_of(
                            servers
                                .iter()
                                .filter_map(|s| s.disk_write_bytes)
                                .map(|b| b as f64),
                        )
                        .map(|b| b.round() as u64),
                        // `lo` receives every byte it sends: half its count is what it carried.
                        loopback_bytes: median_of(
                            servers
                                .iter()
                                .filter_map(|s| s.loopback_bytes)
                                .map(|b| b as f64),
                        )
                        .map(|b| (b / 2.0).round() as u64),
                        noise_max: rs.iter().filter_map(|r| r.noise).fold(None, |m, n| {
                            let (o, s) = m.unwrap_or((0.0, 0.0));
                            Some((o.max(n.other_cpu_percent), s.max(n.steal_percent)))
                        }),
                        error: rs.iter().find_map(|r| r.errors.first().cloned()),
                        p50_runs: rs.iter().map(|r| r.latency.p50_us).collect(),
                        throughput_runs: rs.iter().map(|r| r.throughput_msgs).collect(),
                    }
                })
                .collect();
            (spec, sums)
        })
        .collect()
}

fn is_peer(name: &str) -> bool {
    !matches!(
        System::parse(name),
        Some(System::Fogline | System::FoglineMqtt | System::Memory)
    )
}

/// One row of the ratio table.
#[derive(Debug, Clone, Serialize)]
pub struct Ratio {
    /// Cell label.
    pub cell: String,
    /// The metric compared.
    pub metric: Metric,
    /// fogline's value.
    pub fogline: f64,
    /// The best peer (latency: among peers that lost at most 1 %), and its value.
    pub best_peer: Option<(String, f64)>,
    /// fogline / best peer.
    pub ratio_best: Option<f64>,
    /// Its 95 % bootstrap interval over the repetitions ([`crate::interval`]).
    pub interval_best: Option<(f64, f64)>,
    /// The best broker (the best peer leaving out brokerless ZeroMQ, which has one hop less).
    pub best_broker: Option<(String, f64)>,
    /// fogline / best broker.
    pub ratio_broker: Option<f64>,
    /// Its 95 % bootstrap interval.
    pub interval_broker: Option<(f64, f64)>,
    /// fogline / each peer.
    pub ratios: Vec<(String, f64)>,
}

/// The ratios `subject` (fogline or fogline-mqtt) / peer for every cell the subject ran in.
pub fn ratios(summaries: &[(CellSpec, Vec<Summary>)], subject: System) -> Vec<Ratio> {
    let mut out = Vec::new();
    for (spec, sums) in summaries {
        let m = Metric::of(spec);
        let Some(fog) = sums.iter().find(|s| s.system == subject.name()) else {
            continue;
        };
        let fv = fog.value(m);
        let peers: Vec<&Summary> = sums.iter().filter(|s| is_peer(&s.system)).collect();
        let best_of = |brokers_only: bool| {
            peers
                .iter()
                .copied()
                .filter(|s| !brokers_only || s.system != System::Zeromq.name())
                .filter(|s| m == Metric::Throughput || s.loss_pct <= 1.0)
                .filter(|s| s.value(m) > 0.0)
                .fold(None::<&Summary>, |b, s| match b {
                    Some(b) if !m.better(s.value(m), b.value(m)) => Some(b),
                    _ => Some(s),
                })
        };
        let best = best_of(false);
        let broker = best_of(true);
        // The subject is held to the peers' rule: a latency from a run that lost more than
        // 1 %, or a median of 0 from runs that received nothing, is not compared.
        let comparable = m == Metric::Throughput || (fog.loss_pct <= 1.0 && fv > 0.0);
        let ratio = |v: f64| {
            if v > 0.0 && comparable {
                fv / v
            } else {
                f64::NAN
            }
        };
        let interval = |p: &Summary| {
            comparable
                .then(|| interval::ratio_of_medians(fog.runs(m), p.runs(m)))
                .flatten()
        };
        let ratio_of = |p: Option<&Summary>| p.map(|p| ratio(p.value(m))).filter(|r| !r.is_nan());
        out.push(Ratio {
            cell: spec.label.clone(),
            metric: m,
            fogline: fv,
            best_peer: best.map(|b| (b.system.clone(), b.value(m))),
            ratio_best: ratio_of(best),
            interval_best: best.and_then(&interval),
            best_broker: broker.map(|b| (b.system.clone(), b.value(m))),
            ratio_broker: ratio_of(broker),
            // Usually the same peer as the best: resample once.
            interval_broker: match (best, broker) {
                (Some(b), Some(k)) if b.system == k.system => best.and_then(&interval),
                _ => broker.and_then(&interval),
            },
            ratios: peers
                .iter()
                .map(|s| (s.system.clone(), ratio(s.value(m))))
                .collect(),
        });
    }
    out
}

fn num(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v >= 100_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// For a run that was interrupted, or where a system failed to start in some round, how
/// many repetitions its cells hold.
fn partial_note(sums: &[(CellSpec, Vec<Summary>)], repetitions: u32) -> String {
    let repetitions = repetitions as usize;
    let runs = sums.iter().flat_map(|(_, v)| v.iter().map(|x| x.runs));
    let (lo, hi) = runs.fold((usize::MAX, 0), |(lo, hi), n| (lo.min(n), hi.max(n)));
    if hi == 0 || (lo == repetitions && hi == repetitions) {
        return String::new();
    }
    if lo == hi {
        format!("; this run holds {lo} per cell")
    } else {
        format!("; this run holds {lo} to {hi} per cell")
    }
}

/// Other work on the machine over all runs that recorded it (see [`crate::quiet`]).
fn noise_line(results: &[CellResult]) -> Option<String> {
    let noise: Vec<&crate::quiet::Noise> =
        results.iter().filter_map(|r| r.noise.as_ref()).collect();
    if noise.is_empty() {
        return None;
    }
    let spread = |f: fn(&crate::quiet::Noise) -> f64| {
        let mut v: Vec<f64> = noise.iter().map(|n| f(n)).collect();
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], v[v.len() - 1])
    };
    let (other_mid, other_max) = spread(|n| n.other_cpu_percent);
    let (steal_mid, steal_max) = spread(|n| n.steal_percent);
    let redone: u32 = noise.iter().map(|n| n.redone).sum();
    Some(format!(
        "other work during the runs: other processes' CPU median {other_mid:.1} % of a core \
         (max {other_max:.1} %), steal time median {steal_mid:.1} % (max {steal_max:.1} %) \
         over {} runs; {redone} disturbed runs were discarded and measured again",
        noise.len()
    ))
}

/// The Markdown summary.
pub fn markdown(report: &RunReport) -> String {
    let m = &report.meta;
    let sums = summarise(&report.results);
    let mut s = String::new();
    let _ = writeln!(s, "# {}: {}\n", m.scenario, m.source);
    let _ = writeln!(s, "- command: `{}`", m.command);
    let _ = writeln!(s, "- date: {} (UTC)", m.date);
    if !m.resumed.is_empty() {
        let _ = writeln!(
            s,
            "- interrupted and resumed (`--resume`) at (UTC): {}",
            m.resumed.join(", ")
        );
    }
    if !m.build.exe.is_empty() {
        let checkout = if m.build.checkout.is_empty() {
            String::new()
        } else {
            format!(", from checkout `{}`", m.build.checkout)
        };
        let _ = writeln!(s, "- build: executable hash `{}`{checkout}", m.build.exe);
    }
    let _ = writeln!(s, "- machine: {}", m.machine);
    match m.placement {
        Some(p) => {
            let _ = writeln!(
                s,
                "- placement: server pinned to core {}, load generator to core {}",
                p.server_core, p.load_core
            );
        }
        None => {
            let _ = writeln!(s, "- placement: not pinned");
        }
    }
    let _ = writeln!(
        s,
        "- repetitions per cell: {} (medians shown){}",
        m.repetitions,
        partial_note(&sums, m.repetitions)
    );
    if let Some(line) = noise_line(&report.results) {
        let _ = writeln!(s, "- {line}");
    }
    if m.scenario.ends_with("-quick") {
        let _ = writeln!(
            s,
            "- QUICK run: shortened durations and repetitions; indicative only"
        );
    }
    for subject in [System::Fogline, System::FoglineMqtt] {
        ratio_table(&mut s, &ratios(&sums, subject), subject);
    }
    let _ = writeln!(s, "\n## Results\n");
    let replay = if sums.iter().any(|(c, _)| c.reading == Reading::Replay) {
        " In a cell that reads stored data back, the server's figures cover the whole run: \
         storing the data, then reading it."
    } else {
        ""
    };
    let _ = writeln!(
        s,
        "Medians of the repetitions, except loss, dup and reord (summed over them), server RSS (the \
         largest; in brackets its anonymous part, heap and stacks without mapped files, where \
         recorded) and other CPU / steal (the worst run). Disk MB: the server's writes to storage; \
         loopback MB: bytes carried by the loopback interface (counted once, not as \
         sent and again as received), which is the server's traffic in and out here: load and \
         server share the machine. One server process serves a system's cells of a round in \
         order, so its RSS includes what earlier cells left (stored topics; a memory-mapped \
         log's pages count as resident while mapped).{replay}\n"
    );
    let _ = writeln!(s, "| cell | system | msg/s | MB/s | p50 us | p99 us | loss % | dup | reord | server CPU % | server RSS MiB | disk MB | loopback MB | other CPU / steal % (max) | note |");
    let _ = writeln!(s, "|{}", " --- |".repeat(15));
    for (spec, list) in &sums {
        for x in list {
            let opt = |v: Option<f64>| v.map_or("-".into(), num);
            let lat = |v: f64| {
                if Metric::of(spec) == Metric::LatencyP50
                    || spec.subscribers > 0 && spec.reading == Reading::Live
                {
                    num(v)
                } else {
                    "-".into()
                }
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {:.2} | {} | {} | {} | {} | {} | {} | {} | {} |",
                spec.label,
                x.system,
                num(x.throughput_msgs),
                num(x.throughput_mbps),
                lat(x.p50_us),
                lat(x.p99_us),
                x.loss_pct,
                x.duplicates,
                x.reordered,
                opt(x.cpu_pct),
                match (x.rss_mib, x.anon_mib) {
                    (Some(r), Some(a)) => format!("{} ({} anon)", num(r), num(a)),
                    (r, _) => opt(r),
                },
                opt(x.disk_bytes.map(|b| b as f64 / 1e6)),
                opt(x.loopback_bytes.map(|b| b as f64 / 1e6)),
                x.noise_max
                    .map_or("-".into(), |(o, st)| format!("{o:.0} / {st:.1}")),
                x.error.as_deref().map_or(String::new(), |e| e
                    .replace('|', "/")
                    .chars()
                    .take(80)
                    .collect()),
            );
        }
    }
    if !report.skipped.is_empty() {
        let _ = writeln!(s, "\n## Not measured\n");
        for k in &report.skipped {
            let _ = writeln!(
                s,
                "- {} / {}: {}",
                k.system,
                k.cell,
                k.reason.replace('\n', " ")
            );
        }
    }
    s
}

/// Reads a `results.json` written by [`write_all`].
///
/// # Errors
/// When the file cannot be read or is not a report.
pub fn read_json(path: &Path) -> std::io::Result<RunReport> {
    let text = std::fs::read_to_string(path)?;
    serde_json::from_str(&text).map_err(std::io::Error::other)
}

/// Writes `results.json`, `summary.md` and (feature `plots`) the plots into `dir`.
///
/// # Errors
/// When the folder or a file cannot be written.
pub fn write_all(report: &RunReport, dir: &Path) -> std::io::Result<Vec<String>> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_string_pretty(report).map_err(std::io::Error::other)?;
    crate::harness::write_whole(&dir.join("results.json"), json.as_bytes())?;
    write_derived(report, dir)
}

/// Writes `summary.md` (with the sittings of `sittings.tsv`, if the folder has one) and the
/// plots into `dir`, leaving its `results.json` as it is (the raw data stays byte for byte
/// what was measured, whatever formats floats today).
///
/// # Errors
/// When a file cannot be written.
pub fn write_derived(report: &RunReport, dir: &Path) -> std::io::Result<Vec<String>> {
    let mut md = markdown(report);
    if let Ok(tsv) = std::fs::read_to_string(dir.join(crate::sittings::FILE)) {
        md.push_str(&crate::sittings::markdown(
            &crate::sittings::parse(&tsv),
            report.results.len(),
        ));
    }
    std::fs::write(dir.join("summary.md"), md)?;
    #[allow(unused_mut)]
    let mut notes = Vec::new();
    #[cfg(feature = "plots")]
    notes.extend(crate::plot::write_plots(report, dir)?);
    Ok(notes)
}

/// The Markdown table of `rs`, the ratios of `subject` to each peer.
fn ratio_table(s: &mut String, rs: &[Ratio], subject: System) {
    if rs.is_empty() {
        return;
    }
    let f = subject.name();
    let _ = writeln!(s, "\n## {f} / peers\n");
    let _ = writeln!(s, "Ratios are {f}'s value divided by the peer's: above 1 is better for throughput, below 1 is better for latency. Best latency is chosen among peers that lost at most 1 %; \"best broker\" leaves out brokerless ZeroMQ (one network hop instead of two). In brackets, where each side has at least {} repetitions: the 95 % bootstrap interval of the ratio of medians ({} resamples of each side's repetitions); \"vs best broker\" says whether that interval lies wholly on one side of 1 or holds it (within noise: these runs cannot tell the two apart).\n", interval::MIN_RUNS, interval::RESAMPLES);
    let peers: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for r in rs {
            for (p, _) in &r.ratios {
                if !v.contains(p) {
                    v.push(p.clone());
                }
            }
        }
        v
    };
    let _ = write!(
        s,
        "| cell | metric | {f} | best peer | {f} / best | best broker | {f} / best broker | vs best broker |"
    );
    for p in &peers {
        let _ = write!(s, " / {p} |");
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "|{}", " --- |".repeat(8 + peers.len()));
    for r in rs {
        let pair = |x: &Option<(String, f64)>| x.clone().unwrap_or(("-".into(), f64::NAN));
        let ratio = |x: Option<f64>, i: Option<(f64, f64)>| match (x, i) {
            (None, _) => "-".into(),
            (Some(x), None) => format!("{x:.2}"),
            (Some(x), Some((lo, hi))) => format!("{x:.2} [{lo:.2}, {hi:.2}]"),
        };
        let verdict = r.interval_broker.map_or("-", |i| {
            Verdict::of(i, r.metric == Metric::LatencyP50).word()
        });
        let (bn, bv) = pair(&r.best_peer);
        let (kn, kv) = pair(&r.best_broker);
        let _ = write!(
            s,
            "| {} | {} | {} | {bn} {} | {} | {kn} {} | {} | {verdict} |",
            r.cell,
            r.metric.title(),
            num(r.fogline),
            num(bv),
            ratio(r.ratio_best, r.interval_best),
            num(kv),
            ratio(r.ratio_broker, r.interval_broker),
        );
        for p in &peers {
            let v = r.ratios.iter().find(|(n, _)| n == p).map(|(_, v)| *v);
            let _ = write!(
                s,
                " {} |",
                v.filter(|x| x.is_finite())
                    .map_or("-".into(), |x| format!("{x:.2}"))
            );
        }
        let _ = writeln!(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accounting::Delivery;
    use crate::cell::Budget;
    use crate::latency::LatencySummary;

    fn result(system: &str, spec: &CellSpec, tput: f64, p50: f64, lost: u64) -> CellResult {
        CellResult {
            system: system.into(),
            spec: spec.clone(),
            repetition: 1,
            wire_size: spec.size,
            sent: 100,
            delivery: Delivery {
                expected: 100,
                received: 100 - lost,
                lost,
                ..Delivery::default()
            },
            latency: LatencySummary {
                p50_us: p50,
                ..LatencySummary::default()
            },
            send_seconds: 1.0,
            elapsed_seconds: 1.0,
            publish_rate: tput,
            throughput_msgs: tput,
            throughput_mbps: 0.0,
            server: None,
            noise: None,
            errors: vec![],
        }
    }

    /// The first line of `md` that starts with `prefix`.
    fn line<'a>(md: &'a str, prefix: &str) -> &'a str {
        md.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{md}"))
    }

    fn meta(scenario: &str, command: &str, repetitions: u32) -> crate::harness::Meta {
        crate::harness::Meta {
            scenario: scenario.into(),
            source: "test".into(),
            command: command.into(),
            date: "now".into(),
            machine: "m".into(),
            placement: None,
            repetitions,
            fogline_version: "0".into(),
            resumed: vec![],
            build: Default::default(),
        }
    }

    #[test]
    fn the_summary_states_other_work_during_the_runs() {
        let c = CellSpec::new("c", 22, Rate::Max, Budget::Messages(100));
        let mut results = vec![
            result("fogline", &c, 1.0, 1.0, 0),
            result("nats", &c, 1.0, 1.0, 0),
            result("redis", &c, 1.0, 1.0, 0),
        ];
        let report = |results| RunReport {
            meta: meta("t", "c", 1),
            results,
            skipped: vec![],
        };
        assert!(!markdown(&report(results.clone())).contains("other work"));
        for (r, (other, steal, redone)) in
            results
                .iter_mut()
                .zip([(0.5, 0.0, 0), (2.0, 1.5, 2), (40.0, 9.0, 1)])
        {
            r.noise = Some(crate::quiet::Noise {
                other_cpu_percent: other,
                steal_percent: steal,
                redone,
            });
        }
        let md = markdown(&report(results));
        assert!(
            md.contains(
                "other processes' CPU median 2.0 % of a core (max 40.0 %), steal time median \
                 1.5 % (max 9.0 %) over 3 runs; 3 disturbed runs were discarded"
            ),
            "{md}"
        );
        // Each system's row names the worst run of its cell.
        let redis_row = line(&md, "| c | redis |");
        assert!(redis_row.ends_with("| 40 / 9.0 |  |"), "{redis_row}");
    }

    #[test]
    fn the_results_table_gives_memory_disk_and_loopback() {
        let c = CellSpec::new("c", 22, Rate::Max, Budget::Messages(100));
        let usage = |disk: Option<u64>, lo: u64| crate::procstat::ServerUsage {
            cpu_percent: 10.0,
            rss_max_mib: 5.0,
            anon_max_mib: disk.map(|_| 2.0),
            disk_write_bytes: disk,
            loopback_bytes: Some(lo),
            ..Default::default()
        };
        let mut results = Vec::new();
        for (disk, lo) in [
            (Some(1_000_000), 9_000_000),
            (Some(50_000_000), 2_000_000),
            (None, 3_000_000),
        ] {
            let mut r = result("fogline", &c, 1.0, 1.0, 0);
            r.server = Some(usage(disk, lo));
            results.push(r);
        }
        // No server figures at all (brokerless ZeroMQ): dashes, not zeros.
        results.push(result("zeromq", &c, 1.0, 1.0, 0));
        let md = markdown(&RunReport {
            meta: meta("t", "c", 3),
            results,
            skipped: vec![],
        });
        assert!(md.contains("| disk MB | loopback MB |"), "{md}");
        let row = line(&md, "| c | fogline |");
        // disk: median of 1 and 50 MB (the run without a reading left out); loopback: half the
        // median of 9, 2 and 3 MB (received + sent).
        assert!(row.contains("| 25.5 | 1.5 |"), "{row}");
        // RSS: the largest, with the largest anonymous part where a run recorded one.
        assert!(row.contains("| 5.0 (2.0 anon) |"), "{row}");
        let row = line(&md, "| c | zeromq |");
        assert!(row.contains("| - | - | - | - |"), "{row}");
        // Only a scenario that reads stored data back says what its server figures span.
        assert!(!md.contains("reads stored data back"), "{md}");
        let mut replay = c.clone();
        replay.reading = Reading::Replay;
        let md = markdown(&RunReport {
            meta: meta("t", "c", 1),
            results: vec![result("fogline", &replay, 1.0, 1.0, 0)],
            skipped: vec![],
        });
        assert!(md.contains("reads stored data back"), "{md}");
    }

    #[test]
    fn a_partial_run_says_how_many_repetitions_it_holds() {
        let c = CellSpec::new("c", 22, Rate::Max, Budget::Messages(100));
        let report = |repetitions, results| RunReport {
            meta: meta("t", "c", repetitions),
            results,
            skipped: vec![],
        };
        let one = vec![
            result("fogline", &c, 1.0, 2.0, 0),
            result("redis", &c, 1.0, 2.0, 0),
        ];
        let md = markdown(&report(1, one.clone()));
        assert!(
            md.contains("- repetitions per cell: 1 (medians shown)\n"),
            "{md}"
        );
        let md = markdown(&report(5, one.clone()));
        assert!(
            md.contains("5 (medians shown); this run holds 1 per cell\n"),
            "{md}"
        );
        let mut uneven = one;
        uneven.push(result("fogline", &c, 1.0, 2.0, 0));
        let md = markdown(&report(5, uneven));
        assert!(md.contains("this run holds 1 to 2 per cell\n"), "{md}");
    }

    /// A subject that lost more than 1 %, or received nothing (p50 0), gets no latency
    /// ratio: it would otherwise read as "better" than every peer.
    #[test]
    fn a_lossy_subject_gets_no_latency_ratio() {
        let hz = CellSpec::new("hz", 22, Rate::Hz(10.0), Budget::Messages(100));
        for (p50, lost) in [(5.0, 60), (0.0, 100), (0.0, 0)] {
            let rs = vec![
                result("fogline", &hz, 0.0, p50, lost),
                result("redis", &hz, 0.0, 100.0, 0),
                result("nats", &hz, 0.0, 80.0, 0),
            ];
            let r = ratios(&summarise(&rs), System::Fogline);
            assert_eq!(r[0].best_peer, Some(("nats".into(), 80.0)), "{p50} {lost}");
            assert_eq!(r[0].ratio_best, None);
            assert_eq!(r[0].ratio_broker, None);
            assert_eq!(r[0].interval_broker, None);
            assert!(r[0].ratios.iter().all(|(_, v)| v.is_nan()));
            let md = markdown(&RunReport {
                meta: meta("t", "c", 1),
                results: rs,
                skipped: vec![],
            });
            let row = line(&md, "| hz | p50");
            let cols: Vec<&str> = row.split('|').map(str::trim).collect();
            // cell, metric, value, best, ratio, broker, ratio, verdict, then one per peer.
            assert_eq!(
                &cols[5..],
                ["-", "nats 80.0", "-", "-", "-", "-", ""],
                "{row}"
            );
        }
    }

    #[test]
    fn ratios_pick_the_best_peer_by_metric() {
        let max = CellSpec::new("max", 22, Rate::Max, Budget::Messages(100));
        let hz = CellSpec::new("hz", 22, Rate::Hz(10.0), Budget::Messages(100));
        let rs = vec![
            result("fogline", &max, 300.0, 0.0, 0),
            result("redis", &max, 100.0, 0.0, 0),
            result("nats", &max, 200.0, 0.0, 0),
            result("fogline", &hz, 0.0, 50.0, 0),
            result("redis", &hz, 0.0, 100.0, 0),
            // Fastest, but lost most messages: not eligible as best latency.
            result("nats", &hz, 0.0, 10.0, 60),
        ];
        let r = ratios(&summarise(&rs), System::Fogline);
        assert_eq!(r[0].best_peer, Some(("nats".into(), 200.0)));
        assert_eq!(r[0].ratio_best, Some(1.5));
        assert_eq!(r[1].best_peer, Some(("redis".into(), 100.0)));
        assert_eq!(r[1].ratio_best, Some(0.5));
        let mut with_mqtt = rs.clone();
        with_mqtt.push(result("fogline-mqtt", &max, 400.0, 0.0, 0));
        let m = ratios(&summarise(&with_mqtt), System::FoglineMqtt);
        assert_eq!(m.len(), 1, "only cells fogline-mqtt ran in");
        assert_eq!(m[0].ratio_best, Some(2.0));
        assert!(m[0].ratios.iter().all(|(p, _)| p != "fogline"));
        let md = markdown(&RunReport {
            meta: meta("t-quick", "fogline bench t", 1),
            results: rs,
            skipped: vec![],
        });
        assert!(
            md.contains("| max | msg/s (higher is better) | 300 | nats 200 | 1.50 |"),
            "{md}"
        );
        assert!(md.contains("QUICK"));
        let header = line(&md, "| cell | metric");
        let sep = line(&md, "| --- |");
        let row = line(&md, "| max | msg/s");
        let cols = |l: &str| l.matches('|').count();
        assert_eq!(cols(header), cols(sep));
        assert_eq!(cols(header), cols(row));
        let dir = tempfile::tempdir().unwrap();
        let report = RunReport {
            meta: meta("t", "c", 1),
            results: vec![result("fogline", &max, 1.0, 2.0, 3)],
            skipped: vec![],
        };
        write_all(&report, dir.path()).unwrap();
        let back = read_json(&dir.path().join("results.json")).unwrap();
        assert_eq!(back.results[0].delivery, report.results[0].delivery);
        assert_eq!(back.results[0].spec, report.results[0].spec);
        assert!(std::fs::read_to_string(dir.path().join("summary.md"))
            .unwrap()
            .contains("| max | fogline |"));
        // Rewriting the summary leaves the raw results as they were, byte for byte.
        let raw = dir.path().join("results.json");
        let text = std::fs::read_to_string(&raw).unwrap().replace("\n", "\n  ");
        std::fs::write(&raw, &text).unwrap();
        std::fs::remove_file(dir.path().join("summary.md")).unwrap();
        write_derived(&read_json(&raw).unwrap(), dir.path()).unwrap();
        assert_eq!(std::fs::read_to_string(&raw).unwrap(), text);
        let summary = || std::fs::read_to_string(dir.path().join("summary.md")).unwrap();
        assert!(!summary().contains("## Sittings"));
        // The sittings bench/long-run.sh recorded are listed, with the runs each measured.
        std::fs::write(
            dir.path().join(crate::sittings::FILE),
            "started_utc\truns_before\tcommit\tkernel\tcpu\tcores\n\
             2026-11-25T18:38:16Z\t0\tabc\t6.18.44-fc-v669\tAMD EPYC\t2\n",
        )
        .unwrap();
        write_derived(&read_json(&raw).unwrap(), dir.path()).unwrap();
        assert!(summary().contains("## Sittings"));
        assert!(summary().contains("| 2026-11-25T18:38:16Z | 0 | 1 | `abc` | 6.18.44-fc-v669 |"));
    }

    #[test]
    fn ratios_carry_an_interval_and_a_verdict_from_three_repetitions() {
        let hz = CellSpec::new("hz", 22, Rate::Hz(10.0), Budget::Messages(100));
        let run = |system: &str, rep: u32, p50: f64| CellResult {
            repetition: rep,
            ..result(system, &hz, 10.0, p50, 0)
        };
        let mut rs = Vec::new();
        for (rep, (f, m, z)) in [(50.0, 70.0, 40.0), (52.0, 72.0, 80.0), (49.0, 69.0, 51.0)]
            .into_iter()
            .enumerate()
        {
            let rep = rep as u32 + 1;
            rs.extend([
                run("fogline", rep, f),
                run("mosquitto", rep, m),
                run("zeromq", rep, z),
            ]);
        }
        let table = |rs: &[CellResult]| {
            let md = markdown(&RunReport {
                meta: meta("t", "c", 3),
                results: rs.to_vec(),
                skipped: vec![],
            });
            line(&md, "| hz | p50").to_string()
        };
        let r = &ratios(&summarise(&rs), System::Fogline)[0];
        // The best peer (ZeroMQ, median 51) overlaps fogline; the best broker does not.
        let (lo, hi) = r.interval_best.unwrap();
        assert!(lo < 1.0 && hi > 1.0, "{lo} {hi}");
        let (lo, hi) = r.interval_broker.unwrap();
        assert!(hi < 1.0, "{lo} {hi}");
        let row = table(&rs);
        assert!(row.contains("| mosquitto 70.0 | 0.71 ["), "{row}");
        assert!(row.ends_with("| better | 0.71 | 0.98 |"), "{row}");
        // Two repetitions: ratios without brackets, no verdict.
        rs.retain(|r| r.repetition < 3);
        let row = table(&rs);
        assert!(!row.contains('['), "{row}");
        assert!(row.contains("| - |"), "{row}");
    }

    #[test]
    fn medians_over_repetitions() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
    }
}
