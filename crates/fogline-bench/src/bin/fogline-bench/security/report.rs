//! results.json and README.md of `fogline-bench security`: medians over the rounds with
//! their range, and ratios taken within a round (the two set-ups compared ran minutes
//! apart, on the same machine state), with the range of those ratios.

use std::path::Path;

use fogline_bench::cell::{CellResult, Rate};
use fogline_bench::harness::BuildId;
use fogline_bench::interval::spread as stats;
use fogline_bench::pin::Placement;

use super::{Run, Setup};

/// The goal of issue 35: fogline's MQTT/TLS throughput at least this times Mosquitto's.
const TLS_GOAL: f64 = 2.0;

/// What the run was and where.
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct Meta {
    pub(crate) command: String,
    pub(crate) started: String,
    pub(crate) finished: String,
    pub(crate) machine: String,
    pub(crate) placement: Option<Placement>,
    pub(crate) build: BuildId,
    pub(crate) fogline: String,
    pub(crate) mosquitto: String,
    /// The TLS version and cipher suite each broker negotiated.
    pub(crate) tls: Vec<String>,
    /// /proc/loadavg before the first round and after each.
    pub(crate) loadavg: Vec<String>,
    pub(crate) duration_s: f64,
    pub(crate) rounds: u32,
    pub(crate) acl_rules: usize,
    /// fogline's storage (`mmap` in results written before the option existed)
    #[serde(default = "mmap")]
    pub(crate) fogline_storage: String,
}

fn mmap() -> String {
    "mmap".into()
}

pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .trim()
        .to_string()
}

pub(crate) fn write_json(out: &Path, meta: &Meta, runs: &[Run]) -> anyhow::Result<()> {
    let v = serde_json::json!({ "scenario": "security", "meta": meta, "runs": runs });
    std::fs::write(out.join("results.json"), serde_json::to_string_pretty(&v)?)?;
    Ok(())
}

fn rate(x: f64) -> String {
    if x >= 100_000.0 {
        format!("{:.0}k", x / 1000.0)
    } else {
        format!("{x:.0}")
    }
}

/// `median [min-max]` with `f` for each number.
fn show(v: &[f64], f: fn(f64) -> String) -> String {
    stats(v).map_or("-".into(), |(m, lo, hi)| {
        format!("{} [{}-{}]", f(m), f(lo), f(hi))
    })
}

fn us(x: f64) -> String {
    format!("{x:.1}")
}

fn ratio(x: f64) -> String {
    format!("{x:.2}")
}

/// Which value of a cell a table shows.
#[derive(Clone, Copy)]
enum Metric {
    /// Messages/s of the maximum-rate cell.
    Throughput,
    /// p50 of the 1 kHz cell.
    P50,
}

impl Metric {
    fn of(self, r: &CellResult) -> f64 {
        match self {
            Metric::Throughput => r.throughput_msgs,
            Metric::P50 => r.latency.p50_us,
        }
    }

    fn rate_max(self) -> bool {
        matches!(self, Metric::Throughput)
    }
}

/// (round, value) of one set-up's cell.
fn values(runs: &[Run], setup: Setup, qos: u8, size: usize, m: Metric) -> Vec<(u32, f64)> {
    runs.iter()
        .filter(|r| r.setup == setup.key() && r.qos == qos && r.result.spec.size == size)
        .filter(|r| (r.result.spec.rate == Rate::Max) == m.rate_max())
        .map(|r| (r.round, m.of(&r.result)))
        .collect()
}

/// Messages lost in one set-up's cells of (QoS, size), all rounds and both rates, with the
/// number of rounds that lost any: `0`, or `N in R rounds`.
fn lost(runs: &[Run], setup: Setup, qos: u8, size: usize) -> String {
    let (mut n, mut rounds) = (0, std::collections::BTreeSet::new());
    for r in runs
        .iter()
        .filter(|r| r.setup == setup.key() && r.qos == qos && r.result.spec.size == size)
    {
        if r.result.delivery.lost > 0 {
            n += r.result.delivery.lost;
            rounds.insert(r.round);
        }
    }
    if n == 0 {
        "0".into()
    } else {
        format!("{n} in {} rounds", rounds.len())
    }
}

/// a / b within each round both have.
fn ratios(a: &[(u32, f64)], b: &[(u32, f64)]) -> Vec<f64> {
    a.iter()
        .filter_map(|(round, x)| {
            let y = b.iter().find(|(r, _)| r == round)?.1;
            (y > 0.0).then_some(x / y)
        })
        .collect()
}

fn only(v: &[(u32, f64)]) -> Vec<f64> {
    v.iter().map(|x| x.1).collect()
}

/// The cells present, in order: (QoS, size).
fn cells(runs: &[Run]) -> Vec<(u8, usize)> {
    let mut c: Vec<(u8, usize)> = runs.iter().map(|r| (r.qos, r.result.spec.size)).collect();
    c.sort_unstable();
    c.dedup();
    c
}

/// A comparison table of `a` against `b`, and the per-cell ratios of each metric.
fn table(s: &mut String, runs: &[Run], a: Setup, b: Setup, names: (&str, &str)) -> Vec<Vec<f64>> {
    let (na, nb) = names;
    s.push_str(&format!(
        "| QoS | size | {na} msg/s | {nb} msg/s | {na} / {nb} msg/s | {na} p50 us @ 1 kHz | {nb} p50 us @ 1 kHz | {na} / {nb} p50 | lost {na} / {nb} |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
    ));
    let mut all = Vec::new();
    for (qos, size) in cells(runs) {
        let (ta, tb) = (
            values(runs, a, qos, size, Metric::Throughput),
            values(runs, b, qos, size, Metric::Throughput),
        );
        let (pa, pb) = (
            values(runs, a, qos, size, Metric::P50),
            values(runs, b, qos, size, Metric::P50),
        );
        if ta.is_empty() || tb.is_empty() {
            continue;
        }
        let (rt, rp) = (ratios(&ta, &tb), ratios(&pa, &pb));
        s.push_str(&format!(
            "| {qos} | {size} B | {} | {} | **{}** | {} | {} | **{}** | {} / {} |\n",
            show(&only(&ta), rate),
            show(&only(&tb), rate),
            show(&rt, ratio),
            show(&only(&pa), us),
            show(&only(&pb), us),
            show(&rp, ratio),
            lost(runs, a, qos, size),
            lost(runs, b, qos, size),
        ));
        all.push(rt);
        all.push(rp);
    }
    all
}

/// The README: how it ran, the tables, and the goals.
pub(crate) fn readme(meta: &Meta, runs: &[Run]) -> String {
    let mut s = String::from("# security: TLS and an ACL on fogline's MQTT path (issue 35)\n\n");
    s.push_str(&format!(
        "- Command (from the repository root): `{}`\n- Started {}, finished {}\n\
         - Build: {} (executable hash `{}`, checkout `{}`); {}\n\
         - Machine: {}; load average (1, 5, 15 min) before the first round and after each: {}\n",
        meta.command,
        meta.started,
        meta.finished,
        meta.fogline,
        meta.build.exe,
        meta.build.checkout,
        meta.mosquitto,
        meta.machine,
        meta.loadavg
            .iter()
            .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join("; "),
    ));
    s.push_str(&match meta.placement {
        Some(p) => format!(
            "- Placement: each broker pinned to core {}, the load generator (publisher and subscriber, one thread) to core {}\n",
            p.server_core, p.load_core
        ),
        None => "- Placement: not pinned (one core)\n".into(),
    });
    s.push_str(&format!(
        "- TLS negotiated with the client: {}\n- {} rounds; in each, every set-up on a fresh broker, \
         the order within a part alternating; maximum-rate cells {} s, 1 kHz cells {} messages; \
         one publisher, one subscriber; {}\n\n",
        meta.tls.join("; "),
        meta.rounds,
        meta.duration_s,
        (meta.duration_s * 1000.0).round(),
        if meta.fogline_storage == "memory" {
            "fogline keeps records in memory only (`--storage memory`), as Mosquitto keeps \
             QoS 0 messages; Mosquitto `persistence true`"
        } else {
            "both brokers persistent (fogline `mmap`: every record in its log; Mosquitto \
             `persistence true`, which keeps QoS 1 state, not QoS 0 messages)"
        },
    ));
    s.push_str(
        "Values: median over the rounds [min-max]. Ratios: taken within each round, then the \
         median [min-max] of those. msg/s: distinct messages delivered per second at the \
         maximum rate (first send to last arrival; a message a broker dropped is not counted, \
         and lost says how many it dropped); p50: latency at 1 kHz, where no queue builds up. \
         Other CPU % (last table): CPU time of every other process on the machine during the \
         cell, percent of one core (of 200).\n\n",
    );
    let tls = runs.iter().any(|r| r.setup == Setup::FoglineTls.key());
    if tls {
        s.push_str("## MQTT over TLS: fogline against Mosquitto, the same certificates\n\n");
        let r = table(
            &mut s,
            runs,
            Setup::FoglineTls,
            Setup::MosquittoTls,
            ("fogline", "Mosquitto"),
        );
        let tput: Vec<&Vec<f64>> = r.iter().step_by(2).collect();
        let missed = tput
            .iter()
            .filter(|v| stats(v).is_some_and(|(m, _, _)| m < TLS_GOAL))
            .count();
        let lowest = tput
            .iter()
            .flat_map(|v| v.iter().copied())
            .fold(f64::INFINITY, f64::min);
        s.push_str(&format!(
            "\nGoal: fogline's throughput at least {TLS_GOAL}x Mosquitto's. **{}**: the median \
             ratio is below {TLS_GOAL} in {missed} of {} cells; the lowest ratio of any round \
             is {lowest:.2}.\n\n",
            if missed == 0 { "Met" } else { "Missed" },
            tput.len(),
        ));
    }
    if runs.iter().any(|r| r.setup == Setup::FoglineAcl.key()) {
        s.push_str(&format!(
            "## Plain MQTT: fogline without an ACL against fogline with {} ACL rules\n\n\
             With the ACL the client logs in (password file, once per connection, before the \
             clock starts) and every PUBLISH is checked.\n\n",
            meta.acl_rules
        ));
        let r = table(
            &mut s,
            runs,
            Setup::FoglineAcl,
            Setup::FoglinePlain,
            ("ACL", "no ACL"),
        );
        s.push_str(
            "\nGoal: the plain path unchanged by the ACL. Per cell and metric, the ACL / no-ACL \
             ratio's range over the rounds against 1:\n\n",
        );
        for ((qos, size), pair) in cells(runs).iter().zip(r.chunks(2)) {
            for (name, v) in ["throughput", "p50"].iter().zip(pair) {
                let verdict = match stats(v) {
                    Some((_, lo, hi)) if lo <= 1.0 && 1.0 <= hi => "within noise (range holds 1)",
                    Some((m, _, _)) if (m > 1.0) == (*name == "throughput") => {
                        "better with the ACL in every round"
                    }
                    Some(_) => "worse with the ACL in every round",
                    None => "-",
                };
                s.push_str(&format!(
                    "- QoS {qos} {size} B {name}: {} -> {verdict}\n",
                    show(v, ratio)
                ));
            }
        }
        s.push('\n');
    }
    if tls && runs.iter().any(|r| r.setup == Setup::FoglinePlain.key()) {
        s.push_str("## What TLS costs fogline (same rounds, plain listener without ACL)\n\n");
        table(
            &mut s,
            runs,
            Setup::FoglineTls,
            Setup::FoglinePlain,
            ("TLS", "plain"),
        );
        s.push('\n');
    }
    s.push_str(
        "## Every cell\n\n| round | set-up | cell | msg/s | p50 us | p99 us | lost | server CPU % | other CPU % | errors |\n\
         | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n",
    );
    for r in runs {
        let c = &r.result;
        s.push_str(&format!(
            "| {} | {} | {} | {} | {:.1} | {:.1} | {} | {} | {} | {} |\n",
            r.round,
            r.setup,
            c.spec.label,
            rate(c.throughput_msgs),
            c.latency.p50_us,
            c.latency.p99_us,
            c.delivery.lost,
            c.server
                .as_ref()
                .map_or("-".into(), |u| format!("{:.0}", u.cpu_percent)),
            c.noise
                .as_ref()
                .map_or("-".into(), |n| format!("{:.0}", n.other_cpu_percent)),
            c.errors.join("; "),
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_and_ratios_within_rounds() {
        assert_eq!(stats(&[3.0, 1.0, 2.0]), Some((2.0, 1.0, 3.0)));
        assert_eq!(stats(&[4.0, 1.0]), Some((2.5, 1.0, 4.0)));
        assert_eq!(stats(&[]), None);
        let a = [(1, 10.0), (2, 20.0), (3, 30.0)];
        let b = [(1, 2.0), (3, 5.0)];
        assert_eq!(ratios(&a, &b), vec![5.0, 6.0]);
        assert_eq!(show(&[1.0, 3.0, 2.0], ratio), "2.00 [1.00-3.00]");
    }
}
