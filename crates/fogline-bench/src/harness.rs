//! Runs a scenario: for each repetition and each system, start the system (pinned to the
//! server core), run every cell once, stop it; collect everything into a [`RunReport`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::cell::{Budget, CellResult, CellSpec, Rate, Reading};
use crate::clock::utc_now_string;
use crate::driver::{Driver, Durability};
use crate::drivers;
use crate::peers::{PeerEnv, PeerError, RunningPeer};
use crate::pin::Placement;
use crate::quiet;
use crate::runner::{run_cell, RunError};
use crate::scenario::Scenario;
use crate::system::System;

/// How to run a scenario.
#[derive(Debug, Clone)]
pub struct HarnessOptions {
    /// Systems to run, in order.
    pub systems: Vec<System>,
    /// Where peers start from and run.
    pub peers: PeerEnv,
    /// The exact command line, for the report.
    pub command: String,
    /// Server and load cores (None: no pinning).
    pub placement: Option<Placement>,
    /// Show a progress bar.
    pub progress: bool,
    /// An interrupted run of the same scenario: its runs are kept and not run again.
    pub resume: Option<RunReport>,
    /// Where `results.json` is rewritten after every run, so an interrupted run keeps
    /// what it measured (and `--resume` can finish it).
    pub checkpoint: Option<PathBuf>,
    /// Which binary measures, and from which checkout (see [`Meta::build`]).
    pub build: BuildId,
    /// Other work allowed beside a run (see [`crate::quiet`]): wait for a quiet machine
    /// before each run and measure again a run that more disturbed. None: measure whatever
    /// the machine is doing (the noise is still recorded).
    pub quiet: Option<quiet::Limits>,
}

/// What identifies the code that measured a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildId {
    /// A hash of the measuring executables' bytes (the harness and the `fogline` server it
    /// starts): equal only for the same builds.
    pub exe: String,
    /// `git describe --always --dirty` of the working directory, if it is a checkout
    /// (what the binary was most likely built from).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub checkout: String,
}

impl BuildId {
    /// The hash of the running executable and of `server` (the `fogline` executable it
    /// measures, if any), and the current directory's git checkout.
    pub fn current(server: Option<&std::path::Path>) -> BuildId {
        let exe = std::env::current_exe()
            .and_then(|p| hash_file(&p))
            .and_then(|h| match server {
                Some(s) => Ok(h.rotate_left(1) ^ hash_file(s)?),
                None => Ok(h),
            })
            .map_or_else(|e| format!("unknown ({e})"), |h| format!("{h:016x}"));
        let checkout = std::process::Command::new("git")
            .args(["describe", "--always", "--dirty", "--abbrev=12"])
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        BuildId { exe, checkout }
    }
}

/// FNV-1a over 8-byte words (fast enough for a 100 MB binary; identity, not security).
fn hash_file(path: &std::path::Path) -> std::io::Result<u64> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 1 << 20];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut len = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        len += n as u64;
        let mut words = buf[..n].chunks_exact(8);
        for w in &mut words {
            h = (h ^ u64::from_le_bytes(w.try_into().unwrap_or_default()))
                .wrapping_mul(0x0000_0100_0000_01b3);
        }
        for &b in words.remainder() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    Ok(h ^ len)
}

/// A cell that produced no measurement, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Skipped {
    /// The system.
    pub system: String,
    /// The cell label, or "*" for the whole system.
    pub cell: String,
    /// Why.
    pub reason: String,
}

/// Where and how a run happened.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    /// Scenario name.
    pub scenario: String,
    /// What it reproduces.
    pub source: String,
    /// The command line.
    pub command: String,
    /// UTC start time.
    pub date: String,
    /// CPU model, cores, memory, kernel.
    pub machine: String,
    /// Server and load cores.
    pub placement: Option<Placement>,
    /// Repetitions per cell.
    pub repetitions: u32,
    /// fogline version.
    pub fogline_version: String,
    /// UTC times at which an interrupted run was resumed (`--resume`), in order, each with
    /// the executable's hash when a rebuild of the same commit resumed it, and the machine
    /// when it is not the one the run started on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed: Vec<String>,
    /// The build that measured every run (`--resume` refuses another one).
    #[serde(default)]
    pub build: BuildId,
}

/// Everything a scenario run produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// Where and how.
    pub meta: Meta,
    /// Every measured run.
    pub results: Vec<CellResult>,
    /// What could not be measured.
    pub skipped: Vec<Skipped>,
}

/// The same fields as [`RunReport`], borrowed: a checkpoint serialises without a copy.
#[derive(Serialize)]
struct ReportRef<'a> {
    meta: &'a Meta,
    results: &'a [CellResult],
    skipped: &'a [Skipped],
}

/// Records a skip once (a resumed run meets its earlier skips again).
fn add_skip(skipped: &mut Vec<Skipped>, k: Skipped) {
    let known = skipped
        .iter()
        .any(|o| o.system == k.system && o.cell == k.cell && o.reason == k.reason);
    if !known {
        skipped.push(k);
    }
}

/// False for cells the system cannot take part in (replay on a system that keeps no log).
fn takes_part(system: System, cell: &crate::cell::CellSpec) -> bool {
    cell.reading != Reading::Replay || system.keeps_log()
}

/// True when `system` still has a run of `cell` to measure.
fn cell_todo(
    results: &[CellResult],
    system: System,
    cell: &crate::cell::CellSpec,
    reps: u32,
) -> bool {
    (1..=reps).any(|rep| run_todo(results, system, cell, rep))
}

/// True when `system` takes part in `cell` and its repetition `rep` is not measured yet.
fn run_todo(
    results: &[CellResult],
    system: System,
    cell: &crate::cell::CellSpec,
    rep: u32,
) -> bool {
    takes_part(system, cell) && !has_run(results, system.name(), &cell.label, rep)
}

fn has_run(results: &[CellResult], system: &str, cell: &str, rep: u32) -> bool {
    results
        .iter()
        .any(|r| r.system == system && r.spec.label == cell && r.repetition == rep)
}

/// Writes `results.json` into `dir` through a temporary file, so a crash mid-write leaves
/// the previous checkpoint whole.
fn write_checkpoint(dir: &std::path::Path, r: &ReportRef<'_>) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let json = serde_json::to_vec_pretty(r).map_err(std::io::Error::other)?;
    write_whole(&dir.join("results.json"), &json)
}

/// Writes `path` through a temporary file and a rename: a crash leaves the old file whole.
pub(crate) fn write_whole(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(tmp, path)
}

/// A one-line description of this machine.
pub fn machine_description() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
            })
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let mem_gib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0 / 1024.0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "{cpu}, {} cores, {mem_gib:.1} GiB RAM, Linux {}",
        crate::pin::cores(),
        kernel.trim()
    )
}

/// What a run of a cell needs besides the cell.
struct Attempt<'a> {
    bar: &'a ProgressBar,
    scenario: &'a str,
    system: System,
    pid: Option<u32>,
    limits: Option<quiet::Limits>,
}

/// A run's result, or the deadline it missed.
type Outcome = Result<Result<CellResult, RunError>, tokio::time::error::Elapsed>;

impl Attempt<'_> {
    /// Measures one run of `cell`. With limits it first waits for a quiet machine, and
    /// measures again, up to [`quiet::MAX_REDO`] times, a run that other work disturbed,
    /// unless the last wait gave up (`patience` zero: the machine is busy for good). A
    /// disturbed run whose repeat fails is kept, with the failure noted.
    async fn measure(
        &self,
        driver: &Arc<dyn Driver>,
        cell: &CellSpec,
        rep: u32,
        patience: &mut Duration,
        topic_seq: &mut u32,
    ) -> Outcome {
        let label = format!("{}: {} (run {rep})", self.system, cell.label);
        let mut disturbed: Option<CellResult> = None;
        let mut redone = 0;
        loop {
            if let Some(limits) = self.limits {
                let wait = |n: &quiet::Noise| {
                    self.bar.set_message(format!(
                        "{label}: waiting for a quiet machine (other processes {:.0} % of a \
                         core, steal {:.0} %)",
                        n.other_cpu_percent, n.steal_percent
                    ));
                };
                if quiet::wait_for_quiet(limits, self.pid, *patience, wait).await {
                    *patience = quiet::PATIENCE;
                } else {
                    say(
                        self.bar,
                        format!("{label}: the machine stays busy; measuring anyway"),
                    );
                    *patience = Duration::ZERO;
                }
            }
            self.bar.set_message(label.clone());
            *topic_seq += 1;
            let topic = format!("fb-{}-{}-{topic_seq}", self.scenario, std::process::id());
            let outcome = tokio::time::timeout(
                cell_deadline(cell),
                run_cell(driver.clone(), cell, &topic, self.pid, rep),
            )
            .await;
            let mut r = match (outcome, disturbed.take()) {
                (Ok(Ok(r)), _) => r,
                (failed, None) => return failed,
                (failed, Some(mut earlier)) => {
                    let why = match failed {
                        Ok(Err(e)) => e.to_string(),
                        _ => "it hung".into(),
                    };
                    earlier
                        .errors
                        .push(format!("a repeat of this disturbed run failed: {why}"));
                    return Ok(Ok(earlier));
                }
            };
            if let (Some(n), Some(limits)) = (r.noise.as_mut(), self.limits) {
                n.redone = redone;
                if !limits.allow(n) && redone < quiet::MAX_REDO && !patience.is_zero() {
                    say(
                        self.bar,
                        format!(
                            "{label}: other processes took {:.0} % of a core, steal {:.0} %; \
                             measuring it again",
                            n.other_cpu_percent, n.steal_percent
                        ),
                    );
                    redone += 1;
                    disturbed = Some(r);
                    continue;
                }
            }
            return Ok(Ok(r));
        }
    }
}

/// Prints above the progress bar, or to stderr when there is none (`--no-progress`).
fn say(bar: &ProgressBar, msg: String) {
    if bar.is_hidden() {
        eprintln!("{msg}");
    } else {
        bar.println(msg);
    }
}

/// The longest a cell may take before it is abandoned.
fn cell_deadline(c: &crate::cell::CellSpec) -> Duration {
    let send = match (c.budget, c.rate) {
        (Budget::Time(d), _) => d,
        (Budget::Messages(n), Rate::Hz(h)) => Duration::from_secs_f64(n as f64 / h),
        (Budget::Messages(n), Rate::Max) => Duration::from_secs(10 + n / 5_000),
    };
    send * 2 + c.straggler_timeout + Duration::from_secs(90)
}

/// The entry `--resume` adds to [`Meta::resumed`]: the time, the executable when a rebuild
/// of the same commit resumes (see `fogline-bench run --resume`), and the machine when it is not
/// the one the run started on (a long run meets other machines and kernel builds).
fn resume_note(now: String, meta: &Meta, exe: &str, machine: String) -> String {
    let mut when = now;
    if exe != meta.build.exe {
        when = format!("{when} by executable `{exe}`");
    }
    if machine != meta.machine {
        when = format!("{when} on {machine}");
    }
    when
}

/// Runs `scenario` as `opts` say, on the current tokio runtime.
pub async fn run(scenario: &Scenario, opts: &HarnessOptions) -> RunReport {
    let (meta, mut results, mut skipped) = match &opts.resume {
        Some(prev) => {
            let mut meta = prev.meta.clone();
            let when = resume_note(
                utc_now_string(),
                &meta,
                &opts.build.exe,
                machine_description(),
            );
            meta.resumed.push(when);
            // Runs still missing are tried again: their earlier failures no longer stand.
            let skipped: Vec<Skipped> = prev
                .skipped
                .iter()
                .filter(|k| {
                    !opts.systems.iter().any(|&s| {
                        s.name() == k.system
                            && scenario.cells.iter().any(|c| {
                                (k.cell == "*" || k.cell == c.label)
                                    && cell_todo(&prev.results, s, c, scenario.repetitions)
                            })
                    })
                })
                .cloned()
                .collect();
            (meta, prev.results.clone(), skipped)
        }
        None => (
            Meta {
                scenario: scenario.name.clone(),
                source: scenario.source.into(),
                command: opts.command.clone(),
                date: utc_now_string(),
                machine: machine_description(),
                placement: opts.placement,
                repetitions: scenario.repetitions,
                fogline_version: env!("CARGO_PKG_VERSION").into(),
                resumed: Vec::new(),
                build: opts.build.clone(),
            },
            Vec::new(),
            Vec::new(),
        ),
    };
    let checkpoint = |results: &[CellResult], skipped: &[Skipped]| {
        if let Some(dir) = &opts.checkpoint {
            let r = ReportRef {
                meta: &meta,
                results,
                skipped,
            };
            if let Err(e) = write_checkpoint(dir, &r) {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot write the checkpoint");
            }
        }
    };
    // A fresh run replaces at once whatever an earlier run left in the folder, so an
    // interruption before the first run ends cannot pass the old runs off as this one's.
    if opts.resume.is_none() {
        checkpoint(&results, &skipped);
    }
    let total =
        opts.systems.len() as u64 * scenario.cells.len() as u64 * u64::from(scenario.repetitions);
    let bar = if opts.progress {
        let b = ProgressBar::new(total);
        if let Ok(style) =
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
        {
            b.set_style(style.progress_chars("=> "));
        }
        b
    } else {
        ProgressBar::hidden()
    };
    let mut topic_seq = 0u32;
    // Repetition-major: every system runs once per repetition, so the machine's drift over
    // hours is shared by all systems instead of landing on whichever ran last, and an
    // interrupted run leaves whole repetitions of every system.
    let mut unavailable: Vec<System> = Vec::new();
    let mut patience = quiet::PATIENCE;
    for rep in 1..=scenario.repetitions {
        for &system in &opts.systems {
            let cells = scenario.cells.len() as u64;
            let todo = scenario
                .cells
                .iter()
                .any(|c| run_todo(&results, system, c, rep));
            if !todo || unavailable.contains(&system) {
                bar.inc(cells);
                continue;
            }
            bar.set_message(format!("{system}: starting (repetition {rep})"));
            let peer = match start_peer(system, opts, scenario).await {
                Ok(p) => p,
                Err(e) => {
                    let missing = matches!(e, PeerError::Missing(_));
                    let reason = if missing {
                        e.to_string()
                    } else {
                        format!("repetition {rep}: {e}")
                    };
                    say(&bar, format!("skipping {system}: {reason}"));
                    add_skip(
                        &mut skipped,
                        Skipped {
                            system: system.name().into(),
                            cell: "*".into(),
                            reason,
                        },
                    );
                    // Not installed: no later round can do better. A failed start (a port
                    // taken, a slow machine) is tried again in the next round.
                    if missing {
                        unavailable.push(system);
                    }
                    bar.inc(cells);
                    continue;
                }
            };
            // One driver per durability the cells ask for (the MQTT scenario mixes QoS 0
            // and 1 on one broker).
            let mut by_durability: Vec<(Durability, Arc<dyn Driver>)> = Vec::new();
            for cell in &scenario.cells {
                if !takes_part(system, cell) {
                    add_skip(
                        &mut skipped,
                        Skipped {
                            system: system.name().into(),
                            cell: cell.label.clone(),
                            reason: "keeps no log to read back".into(),
                        },
                    );
                    bar.inc(1);
                    continue;
                }
                if has_run(&results, system.name(), &cell.label, rep) {
                    bar.inc(1);
                    continue;
                }
                let known = by_durability.iter().find(|(d, _)| *d == cell.durability);
                let driver = match known {
                    Some((_, d)) => d.clone(),
                    None => match drivers::connect(system, &peer.addr, cell.durability) {
                        Ok(d) => {
                            by_durability.push((cell.durability, d.clone()));
                            d
                        }
                        Err(e) => {
                            add_skip(
                                &mut skipped,
                                Skipped {
                                    system: system.name().into(),
                                    cell: cell.label.clone(),
                                    reason: e.to_string(),
                                },
                            );
                            bar.inc(1);
                            continue;
                        }
                    },
                };
                let attempt = Attempt {
                    bar: &bar,
                    scenario: &scenario.name,
                    system,
                    pid: peer.pid,
                    limits: opts.quiet,
                };
                let outcome = attempt
                    .measure(&driver, cell, rep, &mut patience, &mut topic_seq)
                    .await;
                match outcome {
                    Ok(Ok(r)) => results.push(r),
                    Ok(Err(e)) => skipped.push(Skipped {
                        system: system.name().into(),
                        cell: cell.label.clone(),
                        reason: e.to_string(),
                    }),
                    Err(_) => skipped.push(Skipped {
                        system: system.name().into(),
                        cell: cell.label.clone(),
                        reason: format!("did not finish within {:?} (hung)", cell_deadline(cell)),
                    }),
                }
                checkpoint(&results, &skipped);
                bar.inc(1);
            }
            bar.set_message(format!("{system}: stopping"));
            drop(by_durability);
            tokio::task::spawn_blocking(move || drop(peer)).await.ok();
        }
    }
    bar.finish_and_clear();
    RunReport {
        meta,
        results,
        skipped,
    }
}

async fn start_peer(
    system: System,
    opts: &HarnessOptions,
    s: &Scenario,
) -> Result<RunningPeer, PeerError> {
    if !system.compiled_in() {
        return Err(PeerError::Missing(format!(
            "{system}: driver not compiled in (build fogline-bench with `--features peers`)"
        )));
    }
    let env = opts.peers.clone();
    let durability = s.durability;
    match tokio::task::spawn_blocking(move || RunningPeer::start(system, &env, durability)).await {
        Ok(r) => r,
        Err(e) => Err(PeerError::Io(std::io::Error::other(e.to_string()))),
    }
}

/// The default results folder of a scenario: `bench/results/<name>` next to `bench/peers`.
pub fn default_results_dir(scripts: &std::path::Path, scenario: &str) -> PathBuf {
    scripts
        .parent()
        .map_or_else(|| PathBuf::from("bench"), std::path::Path::to_path_buf)
        .join("results")
        .join(scenario)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resume_names_another_build_and_another_machine() {
        let meta = Meta {
            scenario: "s".into(),
            source: "t".into(),
            command: "c".into(),
            date: "d".into(),
            machine: "AMD EPYC, 2 cores, 23.5 GiB RAM, Linux 6.18.44-fc-v509".into(),
            placement: None,
            repetitions: 1,
            fogline_version: "0".into(),
            resumed: vec![],
            build: BuildId {
                exe: "aaaa".into(),
                checkout: "abc".into(),
            },
        };
        let same = meta.machine.clone();
        let other = "AMD EPYC, 2 cores, 23.5 GiB RAM, Linux 6.18.44-fc-v669".to_string();
        assert_eq!(resume_note("T".into(), &meta, "aaaa", same.clone()), "T");
        assert_eq!(
            resume_note("T".into(), &meta, "bbbb", same),
            "T by executable `bbbb`"
        );
        assert_eq!(
            resume_note("T".into(), &meta, "bbbb", other.clone()),
            format!("T by executable `bbbb` on {other}")
        );
        assert_eq!(
            resume_note("T".into(), &meta, "aaaa", other.clone()),
            format!("T on {other}")
        );
    }
}
