//! The results of `fogline-bench store`: `results.json` (every run) and `summary.md` (the
//! command, machine, settings, and per durability class the tables of figures 5-7 with each
//! ratio's median and range over the rounds, and the goals checked).

use std::fmt::Write as _;
use std::time::SystemTime;

use fogline_bench::pin::Placement;

use super::{Durability, Run, StoreArgs};

/// Where and how the run was made, read when it starts.
pub struct Context {
    command: String,
    started: String,
    machine: String,
    build: String,
    load_before: String,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

impl Context {
    pub fn now(a: &StoreArgs, placement: Option<Placement>) -> Context {
        let cpu = read("/proc/cpuinfo")
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
            })
            .unwrap_or_default();
        let mem = read("/proc/meminfo")
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        let pin = match (placement, a.no_pin) {
            (Some(p), _) => format!(
                "this process pinned to core {} (the server core)",
                p.server_core
            ),
            (None, true) => "not pinned (--no-pin)".into(),
            (None, false) => "not pinned (one core)".into(),
        };
        let git = std::process::Command::new("git")
            .args(["describe", "--always", "--dirty"])
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        let profile = if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        };
        Context {
            command: std::env::args().collect::<Vec<_>>().join(" "),
            started: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            machine: format!(
                "{} cores ({cpu}), {}, Linux {}; {pin}",
                fogline_bench::pin::cores(),
                mem.split_whitespace().skip(1).collect::<Vec<_>>().join(" "),
                read("/proc/sys/kernel/osrelease").trim()
            ),
            build: format!("git {git}, {profile} build"),
            load_before: read("/proc/loadavg").trim().to_string(),
        }
    }
}

/// `median [min-max]` of `v`, each with `digits` decimals.
fn spread(mut v: Vec<f64>, digits: usize) -> String {
    if v.is_empty() {
        return "-".into();
    }
    v.sort_by(f64::total_cmp);
    let med = v[v.len() / 2];
    if v.len() == 1 {
        return format!("{med:.digits$}");
    }
    format!(
        "{med:.digits$} [{:.digits$}-{:.digits$}]",
        v[0],
        v[v.len() - 1]
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The runs of one durability class.
struct Tables<'a> {
    runs: &'a [Run],
    a: &'a StoreArgs,
    class: Durability,
}

impl Tables<'_> {
    fn get(&self, size: usize, engine: &str, round: usize) -> Option<&Run> {
        self.runs.iter().find(|r| {
            r.durability == self.class && r.size == size && r.engine == engine && r.round == round
        })
    }

    /// `f` of each round's run of `engine` at `size`.
    fn each(&self, size: usize, engine: &str, f: impl Fn(&Run) -> Option<f64>) -> Vec<f64> {
        (0..self.a.rounds)
            .filter_map(|r| self.get(size, engine, r).and_then(&f))
            .collect()
    }

    /// Per round, `f(fogline) / f(other)` (or the reverse with `invert`).
    fn ratio(&self, size: usize, other: &str, f: impl Fn(&Run) -> Option<f64>) -> Vec<f64> {
        (0..self.a.rounds)
            .filter_map(|r| Some(f(self.get(size, "fogline", r)?)? / f(self.get(size, other, r)?)?))
            .collect()
    }

    /// Whether every engine gave the same answer to query `q` at `size` in every round.
    fn agree(&self, size: usize, q: usize) -> bool {
        (0..self.a.rounds).all(|r| {
            let answers: Vec<_> = self
                .runs
                .iter()
                .filter(|x| x.durability == self.class && x.size == size && x.round == r)
                .map(|x| x.queries[q].answer)
                .collect();
            answers.windows(2).all(|w| w[0] == w[1])
        })
    }

    fn has(&self, engine: &str) -> bool {
        self.a.engines.iter().any(|e| e == engine)
    }
}

pub fn write(a: &StoreArgs, c: &Context, runs: &[Run]) -> anyhow::Result<()> {
    std::fs::create_dir_all(&a.out)?;
    std::fs::write(
        a.out.join("results.json"),
        serde_json::to_string_pretty(runs)?,
    )?;
    let mut s = String::new();
    writeln!(
        s,
        "# store: fogline's queryable store, SQLite and redb (paper 004, Fig. 5-7)\n"
    )?;
    writeln!(
        s,
        "Generated by the harness. Every figure is the median over {} rounds",
        a.rounds
    )?;
    writeln!(
        s,
        "with the range in brackets; ratios are taken within a round, then summarised.\n"
    )?;
    writeln!(s, "- Command: `{}`", c.command)?;
    writeln!(
        s,
        "- Started: {}, finished: {}",
        c.started,
        humantime::format_rfc3339_seconds(SystemTime::now())
    )?;
    writeln!(s, "- Build: {}", c.build)?;
    writeln!(s, "- Machine: {}", c.machine)?;
    writeln!(
        s,
        "- Load average before / after: {} / {}",
        c.load_before,
        read("/proc/loadavg").trim()
    )?;
    writeln!(s, "- Batched store: {} records per commit, timed on up to {} fresh stores per run until they took {:?} in all, the median; per record: one commit each, on a store holding N (and the records of the runs before), in runs of up to {} records or {:?}, repeated (up to {} runs) until they took {:?} in all, the median run", a.batch, super::BATCHED_MAX_REPS, super::BATCHED_BUDGET, a.per_record_max, a.per_record_time, super::PER_RECORD_MAX_RUNS, super::PER_RECORD_BUDGET)?;
    writeln!(s, "- Queries: up to {} timed answers or {:?} per query and run (at least 5), after one untimed", a.query_reps, a.query_time)?;
    writeln!(
        s,
        "- Timed from an open store: creating or opening it is not timed, for any engine; the machine's dirty pages are written back (`sync(2)`, untimed) before each fresh store is opened and before each engine's per-record runs, so no phase waits behind the writeback of another engine or of an earlier phase"
    )?;
    for &class in &a.durability {
        let t = Tables { runs, a, class };
        writeln!(
            s,
            "\n## Durability class: survives a {}\n",
            match class {
                Durability::PowerLoss => "power loss",
                Durability::ProcessCrash => "process crash (`kill -9`)",
            }
        )?;
        writeln!(s, "Settings: {}.", class.settings())?;
        class_tables(&mut s, &t, runs)?;
        goals(&mut s, &t)?;
    }
    std::fs::write(a.out.join("summary.md"), &s)?;
    print!("{s}");
    Ok(())
}

/// The store, query and index tables of one class.
fn class_tables(s: &mut String, t: &Tables<'_>, runs: &[Run]) -> anyhow::Result<()> {
    let a = t.a;
    let sizes = &a.sizes;
    let others: Vec<&str> = ["sqlite", "redb"]
        .into_iter()
        .filter(|e| t.has(e))
        .collect();
    for (title, f) in [
        (
            "Store rate, each record committed alone (records/s)",
            (|r: &Run| Some(r.per_record_per_s)) as fn(&Run) -> Option<f64>,
        ),
        ("Store rate, batched (records/s)", |r: &Run| {
            Some(r.batched_per_s)
        }),
    ] {
        writeln!(s, "\n### {title}\n")?;
        write!(s, "| N |")?;
        for e in &a.engines {
            write!(s, " {e} |")?;
        }
        for o in &others {
            write!(s, " fogline / {o} |")?;
        }
        writeln!(
            s,
            "\n|{}",
            " --- |".repeat(1 + a.engines.len() + others.len())
        )?;
        for &n in sizes {
            write!(s, "| {n} |")?;
            for e in &a.engines {
                write!(s, " {} |", spread(t.each(n, e, f), 0))?;
            }
            for o in &others {
                write!(s, " {} |", spread(t.ratio(n, o, f), 2))?;
            }
            writeln!(s)?;
        }
    }
    for (q, name) in query_names(runs).iter().enumerate() {
        writeln!(s, "\n### Query `{name}`: latency p50 / p99 (µs)\n")?;
        writeln!(
            s,
            "First: the untimed first answer (fogline builds an attribute's prefix and suffix \
             structures on their first query; SQLite and redb read their pages in).\n"
        )?;
        write!(s, "| N | hits | same answer |")?;
        for e in &a.engines {
            write!(s, " {e} p50 | {e} p99 | {e} first |")?;
        }
        for o in &others {
            write!(s, " {o} / fogline p50 |")?;
        }
        writeln!(
            s,
            "\n|{}",
            " --- |".repeat(3 + 3 * a.engines.len() + others.len())
        )?;
        for &n in sizes {
            let hits = t.each(n, &a.engines[0], |r| Some(r.queries[q].hits as f64));
            write!(
                s,
                "| {n} | {} | {} |",
                spread(hits, 0),
                if t.agree(n, q) { "yes" } else { "**no**" }
            )?;
            for e in &a.engines {
                write!(
                    s,
                    " {} | {} | {} |",
                    spread(t.each(n, e, |r| Some(r.queries[q].p50_us)), 1),
                    spread(t.each(n, e, |r| Some(r.queries[q].p99_us)), 1),
                    spread(t.each(n, e, |r| r.queries[q].first_us), 1)
                )?;
            }
            for o in &others {
                write!(
                    s,
                    " {} |",
                    spread(t.ratio(n, o, |r| Some(1.0 / r.queries[q].p50_us)), 1)
                )?;
            }
            writeln!(s)?;
        }
    }
    if t.has("fogline") {
        writeln!(
            s,
            "\n### fogline's index: rebuilt from the log, and its memory\n"
        )?;
        writeln!(
            s,
            "| N | rebuild (s) | index bytes per record (`memory_bytes`) |\n| --- | --- | --- |"
        )?;
        for &n in sizes {
            let rebuild = t.each(n, "fogline", |r| r.rebuild_s);
            let bytes = t.each(n, "fogline", |r| r.index_bytes.map(|b| b as f64 / n as f64));
            writeln!(s, "| {n} | {} | {} |", spread(rebuild, 3), spread(bytes, 0))?;
        }
    }
    Ok(())
}

fn query_names(runs: &[Run]) -> Vec<String> {
    runs.first()
        .map(|r| r.queries.iter().map(|q| q.name.clone()).collect())
        .unwrap_or_default()
}

/// The goals, checked on the medians: >= 32x SQLite committing each record, >= 5x
/// batched, and every query faster than SQLite's (p50 and p99) at every size.
fn goals(s: &mut String, t: &Tables<'_>) -> anyhow::Result<()> {
    if !(t.has("fogline") && t.has("sqlite")) {
        return Ok(());
    }
    let names = query_names(t.runs);
    writeln!(s, "\n### Goals (medians over the rounds)\n")?;
    for (what, goal, f) in [
        (
            "store rate, each record committed, >= 32x SQLite",
            32.0,
            (|r: &Run| Some(r.per_record_per_s)) as fn(&Run) -> Option<f64>,
        ),
        ("store rate, batched, >= 5x SQLite", 5.0, |r: &Run| {
            Some(r.batched_per_s)
        }),
    ] {
        let worst =
            t.a.sizes
                .iter()
                .map(|&n| (median(t.ratio(n, "sqlite", f)), n))
                .min_by(|x, y| x.0.total_cmp(&y.0));
        if let Some((r, n)) = worst {
            let verdict = if r >= goal { "met" } else { "**missed**" };
            writeln!(s, "- {what}: {verdict}; lowest {r:.2}x (N = {n})")?;
        }
    }
    let mut slower = Vec::new();
    for (q, name) in names.iter().enumerate() {
        for &n in &t.a.sizes {
            for (p, f) in [
                (
                    "p50",
                    (|r: &Run, q: usize| r.queries[q].p50_us) as fn(&Run, usize) -> f64,
                ),
                ("p99", |r: &Run, q: usize| r.queries[q].p99_us),
            ] {
                let fog = median(t.each(n, "fogline", |r| Some(f(r, q))));
                let sql = median(t.each(n, "sqlite", |r| Some(f(r, q))));
                if fog >= sql || !t.agree(n, q) {
                    slower.push(format!("`{name}` N = {n} {p} ({fog:.1} µs vs {sql:.1} µs)"));
                }
            }
        }
    }
    if slower.is_empty() {
        writeln!(
            s,
            "- every query faster than SQLite's at every size (p50 and p99): met"
        )?;
    } else {
        writeln!(
            s,
            "- every query faster than SQLite's at every size: **missed** at {}",
            slower.join("; ")
        )?;
    }
    Ok(())
}
