//! `fogline-bench run`: the benchmark harness (this crate) against fogline and the real peer
//! systems, on this machine, in one run. Peers start from `bench/peers/start.sh`; fogline
//! starts as `fogline serve` from the `fogline` executable beside this one (or `--fogline`).
//! Results go to `bench/results/<scenario>/` (JSON, Markdown, plots) and the table to stdout.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use fogline_bench::cell::Rate;
use fogline_bench::harness::{self, BuildId, HarnessOptions};
use fogline_bench::peers::{default_scripts_dir, PeerEnv};
use fogline_bench::pin::{self, Placement};
use fogline_bench::quiet;
use fogline_bench::scenario::{self, Overrides};
use fogline_bench::{report, System};

/// Other work allowed beside a full run, percent of one core: far above this machine's idle
/// background (0.0 % in every run of a quick mqtt run), far below a build (100 % and more).
const DEFAULT_MAX_OTHER_CPU: f64 = 10.0;
/// Steal allowed during a full run, percent of all CPU time. Small shares matter at low
/// rates: steal is counted from a woken vCPU's wait for a physical CPU, so 0.8-1.2 % at
/// 30-100 Hz went with p50 latencies of 170-370 us for 1 KiB and 100 KiB where round 1 of an
/// earlier run gave 21-59 us (`bench/results/checks-2026-11-23`). In a quick mqtt run the
/// six runs with the lowest steal had at most 0.3 %.
const DEFAULT_MAX_STEAL: f64 = 0.5;

/// The noise limits the options ask for: a 0 turns that check off, both off (or --quick
/// without either option) is no check at all.
fn quiet_limits(args: &BenchArgs) -> Option<quiet::Limits> {
    if args.quick && args.max_other_cpu.is_none() && args.max_steal.is_none() {
        return None;
    }
    let limit = |v: Option<f64>, default: f64| match v.unwrap_or(default) {
        x if x > 0.0 => x,
        _ => f64::INFINITY,
    };
    let limits = quiet::Limits {
        other_cpu_percent: limit(args.max_other_cpu, DEFAULT_MAX_OTHER_CPU),
        steal_percent: limit(args.max_steal, DEFAULT_MAX_STEAL),
    };
    (limits.other_cpu_percent.is_finite() || limits.steal_percent.is_finite()).then_some(limits)
}

/// Run a benchmark scenario.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Scenario: core, seed000, seed002, seed003, seed004, mqtt (`list` prints them; `report`
    /// rewrites the summary and plots of `--out DIR` from its results.json).
    pub scenario: String,
    /// The short variant (CI): shorter runs, fewer repetitions.
    #[arg(long)]
    pub quick: bool,
    /// Systems to run, comma-separated (default: the scenario's): fogline, fogline-mqtt,
    /// mosquitto, redis, nats, jetstream, rabbitmq, kafka, zeromq, memory.
    #[arg(long, visible_alias = "driver", value_delimiter = ',')]
    pub systems: Vec<String>,
    /// Message size, e.g. 22, 256, 1KiB, 100KiB, 1MiB (core: run exactly this size).
    #[arg(long)]
    pub size: Option<String>,
    /// Rate per producer: `max` or messages per second (core: run exactly this rate).
    #[arg(long)]
    pub rate: Option<String>,
    /// Subscribers per cell.
    #[arg(long)]
    pub subscribers: Option<u32>,
    /// Producers per cell.
    #[arg(long)]
    pub producers: Option<u32>,
    /// Duration of each cell, e.g. 10s.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub duration: Option<Duration>,
    /// Repetitions of each cell.
    #[arg(long)]
    pub repetitions: Option<u32>,
    /// Results folder (default: bench/results/<scenario>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Do not pin the server and the load to separate cores.
    #[arg(long)]
    pub no_pin: bool,
    /// Folder of the peers' start/stop scripts (default: bench/peers of this checkout).
    #[arg(long, env = "FOGLINE_BENCH_PEERS")]
    pub peers_dir: Option<PathBuf>,
    /// Scratch folder for the servers' configs, logs and data (default: a temp folder).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Other processes' CPU allowed beside a run, percent of one core: the harness waits for
    /// a quiet machine before each run and measures a disturbed run again (default: 10 for
    /// full runs; --quick does not check; 0 turns the check off).
    #[arg(long, value_name = "PERCENT")]
    pub max_other_cpu: Option<f64>,
    /// Hypervisor steal time allowed during a run, percent of all CPU time, checked like
    /// --max-other-cpu (default: 0.5 for full runs; 0 turns the check off).
    #[arg(long, value_name = "PERCENT")]
    pub max_steal: Option<f64>,
    /// Finish an interrupted run: keep the runs in `--out`'s results.json and measure only
    /// the missing ones (same scenario and options required).
    #[arg(long)]
    pub resume: bool,
    /// The `fogline` executable whose `fogline serve` is measured (default: the one beside
    /// this executable, as `cargo build` places them).
    #[arg(long, env = "FOGLINE_BIN")]
    pub fogline: Option<PathBuf>,
}

/// The fogline executable to measure: `--fogline`, else `fogline` beside this executable.
fn fogline_exe(args: &BenchArgs) -> anyhow::Result<PathBuf> {
    let exe = match &args.fogline {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .context("locating this executable")?
            .with_file_name("fogline"),
    };
    if !exe.is_file() {
        bail!(
            "no fogline executable at {}: build it (`cargo build --release -p fogline`) or name one with --fogline",
            exe.display()
        );
    }
    Ok(exe)
}

/// Ctrl-C, SIGTERM or SIGHUP (a closed terminal or session): each ends the run the same way,
/// stopping the peers it started and keeping what was measured.
async fn stop_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
        _ = hup.recv() => {}
    }
}

/// The interrupted run in `out` to finish, checked against the scenario about to run.
fn previous_run(
    out: &std::path::Path,
    sc: &scenario::Scenario,
    build: &BuildId,
) -> anyhow::Result<Option<fogline_bench::harness::RunReport>> {
    let path = out.join("results.json");
    if !path.exists() {
        eprintln!(
            "note: nothing to resume in {}; starting afresh",
            out.display()
        );
        return Ok(None);
    }
    let prev = report::read_json(&path).with_context(|| format!("reading {}", path.display()))?;
    if prev.meta.scenario != sc.name || prev.meta.repetitions != sc.repetitions {
        bail!(
            "{} holds a run of {} with {} repetitions, not {} with {}: use another --out, or drop --resume",
            path.display(),
            prev.meta.scenario,
            prev.meta.repetitions,
            sc.name,
            sc.repetitions
        );
    }
    let before = &prev.meta.build.exe;
    if !before.is_empty() && *before != build.exe && !same_clean_commit(&prev.meta.build, build) {
        bail!(
            "{} was measured by another build of fogline (executable hash {before}, checkout {:?}); \
             this one is {} ({:?}): resume with that binary or a build of that clean commit, \
             or drop --resume to start afresh",
            path.display(),
            prev.meta.build.checkout,
            build.exe,
            build.checkout
        );
    }
    for r in &prev.results {
        if !sc.cells.contains(&r.spec) {
            bail!(
                "{}: cell {:?} of the earlier run differs from this scenario's (other options?): use another --out, or drop --resume",
                path.display(),
                r.spec.label
            );
        }
    }
    Ok(Some(prev))
}

/// Two builds of one commit from clean checkouts run the same code, though their executables
/// may differ by a byte (a long run outlives the session, and the build directory, that
/// started it). The harness records the new executable's hash with the resume time.
fn same_clean_commit(a: &BuildId, b: &BuildId) -> bool {
    !a.checkout.is_empty() && !a.checkout.ends_with("-dirty") && a.checkout == b.checkout
}

fn parse_size(s: &str) -> anyhow::Result<usize> {
    let t = s.trim();
    let (num, mult) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let m = match mult.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kib" => 1024,
        "kb" => 1000,
        "m" | "mib" => 1024 * 1024,
        "mb" => 1_000_000,
        _ => bail!("unknown size unit in {s:?} (use B, KiB, MiB, kB, MB)"),
    };
    let n: usize = num
        .trim()
        .parse()
        .with_context(|| format!("bad size {s:?}"))?;
    Ok(n * m)
}

fn parse_rate(s: &str) -> anyhow::Result<Rate> {
    if s.eq_ignore_ascii_case("max") {
        return Ok(Rate::Max);
    }
    let hz: f64 = s
        .trim_end_matches("Hz")
        .trim()
        .parse()
        .with_context(|| format!("bad rate {s:?} (use `max` or messages per second)"))?;
    if !(hz > 0.0 && hz.is_finite()) {
        bail!("rate must be positive: {s:?}");
    }
    Ok(Rate::Hz(hz))
}

/// Runs the benchmark.
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    if args.scenario == "list" {
        for n in scenario::NAMES {
            if let Some(s) = scenario::build(n, false, &Overrides::default()) {
                println!(
                    "{n:8} {} ({} cells x {} runs)",
                    s.source,
                    s.cells.len(),
                    s.repetitions
                );
            }
        }
        return Ok(());
    }
    if args.scenario == "report" {
        let Some(dir) = &args.out else {
            bail!("`fogline-bench run report` needs --out DIR (a folder with results.json)");
        };
        let rep = report::read_json(&dir.join("results.json"))
            .with_context(|| format!("reading {}", dir.join("results.json").display()))?;
        let notes = report::write_derived(&rep, dir)
            .with_context(|| format!("writing {}", dir.display()))?;
        println!("{}", report::markdown(&rep));
        for n in notes {
            eprintln!("note: {n}");
        }
        return Ok(());
    }
    let overrides = Overrides {
        size: args.size.as_deref().map(parse_size).transpose()?,
        rate: args.rate.as_deref().map(parse_rate).transpose()?,
        subscribers: args.subscribers,
        producers: args.producers,
        duration: args.duration,
        repetitions: args.repetitions,
    };
    let Some(sc) = scenario::build(&args.scenario, args.quick, &overrides) else {
        bail!(
            "unknown scenario {:?}; one of: {}",
            args.scenario,
            scenario::NAMES.join(", ")
        );
    };
    if sc.cells.is_empty() {
        bail!("no cell of {} matches --size/--rate", args.scenario);
    }
    let systems = if args.systems.is_empty() {
        sc.systems.clone()
    } else {
        args.systems
            .iter()
            .map(|n| {
                System::parse(n).with_context(|| {
                    let all: Vec<_> = System::ALL.iter().map(|s| s.name()).collect();
                    format!("unknown system {n:?}; one of: {}", all.join(", "))
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?
    };
    // Pin before the runtime starts: its threads (and client libraries' threads) inherit it.
    let placement = if args.no_pin {
        None
    } else {
        Placement::default_for_machine()
    };
    if let Some(p) = placement {
        pin::pin_current_thread(p.load_core).context("pinning the load generator")?;
    }
    let scripts = args
        .peers_dir
        .clone()
        .or_else(default_scripts_dir)
        .unwrap_or_else(|| PathBuf::from("bench/peers"));
    let work_dir = args.work_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("fogline-bench-{}", std::process::id()))
    });
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| harness::default_results_dir(&scripts, &sc.name));
    // Only a run of fogline itself needs its executable.
    let server = if systems
        .iter()
        .any(|s| matches!(s, System::Fogline | System::FoglineMqtt))
    {
        Some(fogline_exe(&args)?)
    } else {
        None
    };
    let build = BuildId::current(server.as_deref());
    let resume = if args.resume {
        previous_run(&out, &sc, &build)?
    } else {
        None
    };
    let opts = HarnessOptions {
        systems,
        peers: PeerEnv {
            scripts,
            work_dir: work_dir.clone(),
            server_core: placement.map(|p| p.server_core),
            fogline_exe: server,
        },
        command: std::iter::once("fogline-bench".to_string())
            .chain(std::env::args().skip(1))
            .collect::<Vec<_>>()
            .join(" "),
        placement,
        progress: !args.no_progress,
        resume,
        checkpoint: Some(out.clone()),
        build,
        quiet: quiet_limits(&args),
    };
    // Pinned to one core, the load runs on one thread: a second worker there adds no
    // parallelism, only cross-thread wake-ups on every hop between tasks (A/B in
    // bench/results/checks-2026-11-22: not worse for any system, within the noise).
    let rt = super::runtime(if placement.is_some() { 1 } else { 2 })?;
    // Ctrl-C drops the run, and with it every started peer (each stops by pid on drop).
    let rep = rt.block_on(async {
        tokio::select! {
            r = harness::run(&sc, &opts) => Some(r),
            () = stop_signal() => None,
        }
    });
    let Some(rep) = rep else {
        if args.work_dir.is_none() {
            let _ = std::fs::remove_dir_all(&work_dir);
        }
        // The checkpoint holds every run measured so far: give it its summary and plots.
        if let Ok(partial) = report::read_json(&out.join("results.json")) {
            if partial.meta.scenario == sc.name {
                let _ = report::write_derived(&partial, &out);
            }
        }
        // A stop the user asked for: one line and the shell's code for it, not an error
        // with a backtrace.
        eprintln!(
            "fogline-bench: interrupted; peers stopped; the runs measured so far are in {}: add --resume to finish the run",
            out.display()
        );
        std::process::exit(130);
    };
    if args.work_dir.is_none() {
        // Our own temp folder; a folder the user named is kept for its logs.
        let _ = std::fs::remove_dir_all(&work_dir);
    }
    let notes =
        report::write_all(&rep, &out).with_context(|| format!("writing {}", out.display()))?;
    println!("{}", report::markdown(&rep));
    for n in notes {
        eprintln!("note: {n}");
    }
    eprintln!("results: {}", out.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_rates() {
        assert_eq!(parse_size("22").unwrap(), 22);
        assert_eq!(parse_size("1KiB").unwrap(), 1024);
        assert_eq!(parse_size("100 KiB").unwrap(), 102_400);
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("10kB").unwrap(), 10_000);
        assert!(parse_size("1 parsec").is_err());
        assert_eq!(parse_rate("max").unwrap(), Rate::Max);
        assert_eq!(parse_rate("60").unwrap(), Rate::Hz(60.0));
        assert_eq!(parse_rate("100Hz").unwrap(), Rate::Hz(100.0));
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("fast").is_err());
    }

    #[test]
    fn noise_limits_from_the_options() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            bench: BenchArgs,
        }
        let limits = |args: &[&str]| {
            let cli =
                <Cli as clap::Parser>::try_parse_from(["run", "seed000"].iter().chain(args.iter()))
                    .unwrap();
            quiet_limits(&cli.bench).map(|l| (l.other_cpu_percent, l.steal_percent))
        };
        assert_eq!(limits(&[]), Some((10.0, 0.5)));
        assert_eq!(limits(&["--quick"]), None);
        assert_eq!(limits(&["--quick", "--max-steal", "5"]), Some((10.0, 5.0)));
        assert_eq!(
            limits(&["--max-other-cpu", "0"]),
            Some((f64::INFINITY, 0.5))
        );
        assert_eq!(limits(&["--max-other-cpu", "0", "--max-steal", "0"]), None);
    }

    /// `--resume` finishes a run only with the build that started it.
    #[test]
    fn resume_requires_the_same_build() {
        let dir = tempfile::tempdir().unwrap();
        let sc = scenario::build("seed002", true, &Overrides::default()).unwrap();
        // Builds of different commits.
        let build = |exe: &str| BuildId {
            exe: exe.into(),
            checkout: format!("c{exe}"),
        };
        let prev = harness::RunReport {
            meta: harness::Meta {
                scenario: sc.name.clone(),
                source: sc.source.into(),
                command: "fogline-bench run seed002 --quick".into(),
                date: "2026-11-22T00:00:00Z".into(),
                machine: "test".into(),
                placement: None,
                repetitions: sc.repetitions,
                fogline_version: "0".into(),
                resumed: vec![],
                build: build("1111"),
            },
            results: vec![],
            skipped: vec![],
        };
        report::write_all(&prev, dir.path()).unwrap();
        assert!(previous_run(dir.path(), &sc, &build("1111"))
            .unwrap()
            .is_some());
        let err = previous_run(dir.path(), &sc, &build("2222")).unwrap_err();
        assert!(err.to_string().contains("another build"), "{err}");
        // A rebuild of the same clean commit may finish it; a dirty checkout may not.
        let commit = |exe: &str, checkout: &str| BuildId {
            exe: exe.into(),
            checkout: checkout.into(),
        };
        let mut clean = prev.clone();
        clean.meta.build = commit("1111", "f010d7c12345");
        report::write_all(&clean, dir.path()).unwrap();
        assert!(
            previous_run(dir.path(), &sc, &commit("2222", "f010d7c12345"))
                .unwrap()
                .is_some()
        );
        for other in ["f010d7c12345-dirty", "0123456789ab", ""] {
            let err = previous_run(dir.path(), &sc, &commit("2222", other)).unwrap_err();
            assert!(err.to_string().contains("another build"), "{other}: {err}");
        }
        clean.meta.build = commit("1111", "f010d7c12345-dirty");
        report::write_all(&clean, dir.path()).unwrap();
        let err = previous_run(dir.path(), &sc, &commit("2222", "f010d7c12345-dirty")).unwrap_err();
        assert!(err.to_string().contains("another build"), "{err}");
        // Runs from before builds were recorded can still be resumed.
        let mut old = prev;
        old.meta.build = BuildId::default();
        report::write_all(&old, dir.path()).unwrap();
        assert!(previous_run(dir.path(), &sc, &build("2222"))
            .unwrap()
            .is_some());
    }
}
