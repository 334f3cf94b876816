//! Other work on the machine during a run.
//!
//! The harness often shares its machine with builds, CI jobs or other virtual machines, and
//! whatever runs beside it slows the system being measured at that moment, not all of them
//! alike. So each run records two figures:
//!
//! - **other CPU**: CPU time that neither the server nor the load generator used, as a
//!   percentage of one core averaged over the measured phase. It is the machine's user +
//!   nice + system time from the `cpu` row of `/proc/stat`, minus both processes' own
//!   user + system time from `/proc/<pid>/stat`, minus the kernel's own threads. Interrupt
//!   time is left out on both sides: with IRQ time accounting the kernel books loopback
//!   traffic's softirq work there rather than in the sending process. Kernel threads are
//!   left out because they mostly work for the run itself (ksoftirqd carrying its loopback
//!   traffic, kworkers writing back a persistent system's pages, kswapd making room for a
//!   system that allocates fast): counted as other work, they made disk- and memory-heavy
//!   systems be measured again more often than others, and kept the run whose writeback
//!   happened to fall outside its window. Other programs (a build, a CI job) still show in
//!   their own processes' time.
//! - **steal**: the hypervisor's steal time as a percentage of all CPU time. This is
//!   another guest on the same host, which no process here can see.
//!
//! With [`Limits`] set, the harness waits before each run until a [`QUIET_WINDOW`] passes
//! within them: one quiet second slipped through between the test binaries of a test suite.
//! It waits for up to [`PATIENCE`]; after it gave up once, it checks a single window until
//! the machine is quiet again, so a machine that is never quiet costs one wait, not one per
//! run. A run that exceeded a limit is measured again, up to [`MAX_REDO`] times, unless the
//! wait before it gave up (then the machine is busy for good, and the run is kept with its
//! figures). Steal time on this
//! project's VM moved 1 kHz latencies from about 20 us to 290 us in runs with 15 % steal
//! (`bench/results/checks-2026-11-23`).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::procstat;

/// How often a disturbed run is measured again before it is kept as it is.
pub const MAX_REDO: u32 = 10;

/// How long the machine must stay within the limits before a run starts.
pub const QUIET_WINDOW: Duration = Duration::from_secs(3);

/// How long to wait for a quiet machine before measuring anyway.
pub const PATIENCE: Duration = Duration::from_secs(30 * 60);

/// How much other work a run tolerates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Other processes' CPU, percent of one core.
    pub other_cpu_percent: f64,
    /// Steal time, percent of all CPU time.
    pub steal_percent: f64,
}

impl Limits {
    /// True when `n` is within both limits.
    pub fn allow(&self, n: &Noise) -> bool {
        n.other_cpu_percent <= self.other_cpu_percent && n.steal_percent <= self.steal_percent
    }
}

/// Machine-wide CPU time, in clock ticks, from the `cpu` row of `/proc/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system.
    pub busy: u64,
    /// steal.
    pub steal: u64,
    /// user .. steal, all eight columns.
    pub all: u64,
}

/// Parses the first (all-CPU) row of `/proc/stat`.
pub fn parse_cpu_row(stat: &str) -> Option<CpuTimes> {
    let row = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = row
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    // user nice system idle iowait irq softirq steal
    let [user, nice, system, _, _, _, _, steal] = v[..] else {
        return None;
    };
    Some(CpuTimes {
        busy: user + nice + system,
        steal,
        all: v.iter().sum(),
    })
}

fn read_cpu() -> Option<CpuTimes> {
    parse_cpu_row(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// Other work seen during one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    /// CPU used by processes other than the server and the load generator, percent of one
    /// core.
    pub other_cpu_percent: f64,
    /// Hypervisor steal time, percent of all CPU time.
    pub steal_percent: f64,
    /// Earlier attempts at this run that were discarded because other work exceeded the
    /// limit.
    #[serde(default)]
    pub redone: u32,
}

/// A measurement window over the machine and the processes that are part of the run.
#[derive(Debug)]
pub struct Watch {
    at: Instant,
    cpu: CpuTimes,
    own: u64,
    kernel: u64,
    pids: Vec<u32>,
}

fn own_ticks(pids: &[u32]) -> u64 {
    pids.iter().filter_map(|&p| procstat::cpu_ticks(p)).sum()
}

/// `PF_KTHREAD` in the flags of `/proc/<pid>/stat` (field 9).
const PF_KTHREAD: u64 = 0x0020_0000;

/// The user + system ticks of a kernel thread's `/proc/<pid>/stat` line; `None` for a
/// process that is not a kernel thread, or a line that does not parse.
pub fn kernel_thread_ticks(stat: &str) -> Option<u64> {
    let f = procstat::stat_fields(stat)?;
    // flags is field 9, utime and stime 14 and 15.
    let flags: u64 = f.get(6)?.parse().ok()?;
    if flags & PF_KTHREAD == 0 {
        return None;
    }
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// CPU ticks all kernel threads used so far.
fn kernel_ticks() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| {
        let name = e.ok()?.file_name();
        let pid: u32 = name.to_str()?.parse().ok()?;
        kernel_thread_ticks(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    })
    .sum()
}

impl Watch {
    /// Starts watching; `server` is the server's process, if there is one. This process
    /// (the load generator and the harness) always counts as part of the run. `None` where
    /// `/proc/stat` cannot be read.
    pub fn start(server: Option<u32>) -> Option<Watch> {
        let pids: Vec<u32> = std::iter::once(std::process::id()).chain(server).collect();
        Some(Watch {
            at: Instant::now(),
            cpu: read_cpu()?,
            own: own_ticks(&pids),
            kernel: kernel_ticks(),
            pids,
        })
    }

    /// What other work used since [`Watch::start`].
    pub fn finish(&self) -> Option<Noise> {
        let cpu = read_cpu()?;
        // Kernel threads count with the run's own work (see the module docs).
        let own = own_ticks(&self.pids).saturating_sub(self.own)
            + kernel_ticks().saturating_sub(self.kernel);
        Some(noise(
            self.cpu,
            cpu,
            own,
            self.at.elapsed(),
            procstat::ticks_per_second(),
        ))
    }
}

/// The figures of a window from its two machine readings and the run's own ticks.
pub fn noise(
    before: CpuTimes,
    after: CpuTimes,
    own_ticks: u64,
    elapsed: Duration,
    ticks_per_second: u64,
) -> Noise {
    let busy = after.busy.saturating_sub(before.busy);
    let other = busy.saturating_sub(own_ticks) as f64 / ticks_per_second.max(1) as f64;
    let secs = elapsed.as_secs_f64();
    let all = after.all.saturating_sub(before.all);
    Noise {
        other_cpu_percent: if secs > 0.0 {
            100.0 * other / secs
        } else {
            0.0
        },
        steal_percent: if all > 0 {
            100.0 * after.steal.saturating_sub(before.steal) as f64 / all as f64
        } else {
            0.0
        },
        redone: 0,
    }
}

/// Waits until a [`QUIET_WINDOW`] passes within `limits`, or until `patience` has passed;
/// true if it found a quiet window. `on_wait` hears each busy window's figures.
pub async fn wait_for_quiet(
    limits: Limits,
    server: Option<u32>,
    patience: Duration,
    mut on_wait: impl FnMut(&Noise),
) -> bool {
    let t0 = Instant::now();
    loop {
        let Some(w) = Watch::start(server) else {
            return true;
        };
        tokio::time::sleep(QUIET_WINDOW).await;
        let Some(n) = w.finish() else {
            return true;
        };
        if limits.allow(&n) {
            return true;
        }
        if t0.elapsed() >= patience {
            return false;
        }
        on_wait(&n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROW: &str = "cpu  100 5 50 1000 10 3 7 20 0 0\ncpu0 50 2 25 500 5 1 3 10 0 0\n";

    #[test]
    fn parses_the_all_cpu_row() {
        let t = parse_cpu_row(ROW).unwrap();
        assert_eq!(t.busy, 155);
        assert_eq!(t.steal, 20);
        assert_eq!(t.all, 1195);
        assert_eq!(parse_cpu_row("cpu0 1 2 3\n"), None);
        assert_eq!(parse_cpu_row("cpu  1 2 3\n"), None);
        assert_eq!(parse_cpu_row("cpu  1 2 x 4 5 6 7 8\n"), None);
    }

    #[test]
    fn limits_hold_both_figures() {
        let limits = Limits {
            other_cpu_percent: 10.0,
            steal_percent: 2.0,
        };
        let n = |other_cpu_percent, steal_percent| Noise {
            other_cpu_percent,
            steal_percent,
            redone: 0,
        };
        assert!(limits.allow(&n(10.0, 2.0)));
        assert!(!limits.allow(&n(10.5, 0.0)));
        assert!(!limits.allow(&n(0.0, 2.5)));
        let steal_unchecked = Limits {
            steal_percent: f64::INFINITY,
            ..limits
        };
        assert!(steal_unchecked.allow(&n(1.0, 90.0)));
    }

    #[test]
    fn other_cpu_is_busy_time_the_run_did_not_use() {
        let a = CpuTimes {
            busy: 1000,
            steal: 10,
            all: 5000,
        };
        // 2 s at 100 ticks/s: 150 busy ticks, 50 of them the run's own: 100 ticks = 1 s of
        // other work in 2 s = 50 % of a core; 20 of 400 ticks stolen = 5 %.
        let b = CpuTimes {
            busy: 1150,
            steal: 30,
            all: 5400,
        };
        let n = noise(a, b, 50, Duration::from_secs(2), 100);
        assert!((n.other_cpu_percent - 50.0).abs() < 1e-9, "{n:?}");
        assert!((n.steal_percent - 5.0).abs() < 1e-9, "{n:?}");
        // The run's own ticks exceed the machine's (sampling skew): no negative noise.
        assert_eq!(
            noise(a, b, 400, Duration::from_secs(2), 100).other_cpu_percent,
            0.0
        );
    }

    #[test]
    fn kernel_threads_are_told_by_their_flags() {
        // kswapd0 as this machine shows it (flags 0x220840: PF_KTHREAD set) and a shell
        // (0x400000).
        let kthread = "45 (kswapd0) S 2 0 0 0 -1 2230336 0 0 0 0 7 31 0 0 20 0 1 0 11 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0";
        let user = "1452 (ba) sh) S 1 1452 1452 0 -1 4194304 900 0 0 0 12 5 3 4 20 0 1 0 300 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0";
        assert_eq!(kernel_thread_ticks(kthread), Some(38));
        assert_eq!(kernel_thread_ticks(user), None);
        assert_eq!(kernel_thread_ticks("1 (x) S"), None);
        assert!(
            kernel_ticks() > 0,
            "this machine has kernel threads with CPU time"
        );
    }

    /// Other-work ticks of a finished window (the inverse of [`noise`]'s scaling).
    fn other_ticks(n: &Noise, secs: f64) -> f64 {
        n.other_cpu_percent / 100.0 * secs * procstat::ticks_per_second() as f64
    }

    /// Ticks allowed for sampling skew between readings taken a moment apart: other work on
    /// a busy machine may land between them.
    const SLOP: f64 = 6.0;

    /// Runs `work` until process `pid` has used `ticks` more CPU ticks (or a minute passes,
    /// which fails the test): waiting on the CPU used, not on the clock, keeps the test
    /// meaningful on a busy machine.
    fn until_ticks(pid: u32, ticks: u64, mut work: impl FnMut()) -> u64 {
        let t0 = procstat::cpu_ticks(pid).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            work();
            let used = procstat::cpu_ticks(pid).unwrap() - t0;
            if used >= ticks {
                return used;
            }
            assert!(Instant::now() < deadline, "{pid} used only {used} ticks");
        }
    }

    /// This process's own CPU is the run's own work and never counts as other work,
    /// however busy the rest of the machine is: what the window calls other work is at most
    /// the machine's busy time less this process's spin.
    #[test]
    fn own_work_is_not_other_work() {
        let me = std::process::id();
        let before = read_cpu().unwrap();
        let w = Watch::start(None).unwrap();
        let t = Instant::now();
        let spun = until_ticks(me, 40, || {
            let mut x = 0u64;
            for _ in 0..100_000 {
                x = x.wrapping_add(std::hint::black_box(1));
            }
            std::hint::black_box(x);
        });
        let n = w.finish().unwrap();
        let after = read_cpu().unwrap();
        let busy = (after.busy - before.busy) as f64;
        let other = other_ticks(&n, t.elapsed().as_secs_f64());
        assert!(
            other <= busy - spun as f64 + SLOP,
            "other {other:.1} ticks, machine busy {busy}, own spin {spun}"
        );
    }

    /// A busy child process is other work, unless it is the run's server: two windows over
    /// the same moment, one naming the child as the server, differ by the child's ticks.
    #[test]
    fn a_process_is_other_work_unless_it_is_the_server() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let pid = child.id();
        let t = Instant::now();
        let as_other = Watch::start(None).unwrap();
        let as_server = Watch::start(Some(pid)).unwrap();
        let spun = until_ticks(pid, 40, || std::thread::sleep(Duration::from_millis(20)));
        // Read before the child is reaped: a reaped child's time joins this process's own.
        let other = as_other.finish().unwrap();
        let server = as_server.finish().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        let secs = t.elapsed().as_secs_f64();
        let gap = other_ticks(&other, secs) - other_ticks(&server, secs);
        assert!(
            gap >= spun as f64 - SLOP,
            "child spun {spun} ticks; windows differ by {gap:.1}: {other:?} vs {server:?}"
        );
    }
}
