//! Samples a server process's CPU time, resident memory and disk writes from /proc, and the
//! loopback interface's byte counters, while a run is in progress.
//!
//! Sources: `/proc/<pid>/stat` fields 14-17 (utime, stime, cutime, cstime in clock ticks),
//! `/proc/<pid>/status` `VmRSS` and `RssAnon` (its anonymous part: heap and stacks, not
//! mapped files; Linux 4.5 on), `/proc/<pid>/io` `write_bytes` (bytes sent to the block
//! layer; needs the same user or root), `/proc/net/dev` row `lo` (all loopback traffic on
//! the machine, not only the server's: say so when reporting it).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// One reading of a process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// CPU time, user + system, of the process and its waited-for children, in clock ticks.
    pub cpu_ticks: u64,
    /// Resident set size in KiB.
    pub rss_kib: u64,
    /// Its anonymous part in KiB, if the kernel reports it.
    pub anon_kib: Option<u64>,
    /// Bytes the process caused to be written to storage, if readable.
    pub write_bytes: Option<u64>,
}

/// The fields of a `/proc/<pid>/stat` line from field 3 (state) on: field N is at index
/// N - 3. The command name (field 2) may hold spaces and parentheses, so the line is split
/// after the last ')'.
pub fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    Some(stat[stat.rfind(')')? + 1..].split_whitespace().collect())
}

/// Parses the CPU ticks out of a `/proc/<pid>/stat` line.
pub fn parse_stat(stat: &str) -> Option<u64> {
    let fields = stat_fields(stat)?;
    // utime is field 14 -> index 11.
    let mut sum = 0u64;
    for i in 11..15 {
        sum += fields.get(i)?.parse::<u64>().ok()?;
    }
    Some(sum)
}

/// Parses `VmRSS` (KiB) out of `/proc/<pid>/status`.
pub fn parse_rss(status: &str) -> Option<u64> {
    status_kib(status, "VmRSS:")
}

/// Parses `RssAnon` (KiB) out of `/proc/<pid>/status`.
pub fn parse_rss_anon(status: &str) -> Option<u64> {
    status_kib(status, "RssAnon:")
}

fn status_kib(status: &str, key: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Parses `write_bytes` out of `/proc/<pid>/io`.
pub fn parse_io_write(io: &str) -> Option<u64> {
    io.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// Parses received + transmitted bytes of interface `lo` out of `/proc/net/dev`.
pub fn parse_lo_bytes(dev: &str) -> Option<u64> {
    let line = dev.lines().find(|l| l.trim_start().starts_with("lo:"))?;
    let fields: Vec<&str> = line.split(':').nth(1)?.split_whitespace().collect();
    Some(fields.first()?.parse::<u64>().ok()? + fields.get(8)?.parse::<u64>().ok()?)
}

/// CPU ticks process `pid` used so far (see [`parse_stat`]); `None` if it is gone.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Reads process `pid` now; `None` if it is gone.
pub fn read(pid: u32) -> Option<Reading> {
    let cpu_ticks = cpu_ticks(pid)?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok();
    Some(Reading {
        cpu_ticks,
        rss_kib: parse_rss(&status)?,
        anon_kib: parse_rss_anon(&status),
        write_bytes: io.as_deref().and_then(parse_io_write),
    })
}

fn lo_bytes() -> Option<u64> {
    parse_lo_bytes(&std::fs::read_to_string("/proc/net/dev").ok()?)
}

pub(crate) fn ticks_per_second() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// What a server used during a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerUsage {
    /// CPU seconds consumed during the run.
    pub cpu_seconds: f64,
    /// Average CPU use, percent of one core.
    pub cpu_percent: f64,
    /// Largest resident set seen, MiB.
    pub rss_max_mib: f64,
    /// Largest anonymous part of it seen, MiB (None in runs recorded before it was sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anon_max_mib: Option<f64>,
    /// Bytes written to storage during the run (None if unreadable).
    pub disk_write_bytes: Option<u64>,
    /// Bytes over the loopback interface during the run (the whole machine's).
    pub loopback_bytes: Option<u64>,
    /// Samples taken.
    pub samples: u64,
}

/// A background thread that samples one process every `period` until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<ServerUsage>,
}

impl Sampler {
    /// Starts sampling process `pid`.
    pub fn start(pid: u32, period: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || sample_loop(pid, period, &flag));
        Self { stop, handle }
    }

    /// Stops sampling and returns what the process used meanwhile.
    pub fn finish(self) -> ServerUsage {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

fn sample_loop(pid: u32, period: Duration, stop: &AtomicBool) -> ServerUsage {
    let t0 = Instant::now();
    let first = read(pid);
    let lo0 = lo_bytes();
    let mut last = first;
    let mut rss_max = first.map_or(0, |r| r.rss_kib);
    let mut anon_max = first.and_then(|r| r.anon_kib);
    let mut samples = u64::from(first.is_some());
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(period);
        if let Some(r) = read(pid) {
            rss_max = rss_max.max(r.rss_kib);
            anon_max = anon_max.max(r.anon_kib);
            last = Some(r);
            samples += 1;
        }
    }
    let elapsed = t0.elapsed().as_secs_f64();
    let (Some(a), Some(b)) = (first, last) else {
        return ServerUsage::default();
    };
    let cpu_seconds = b.cpu_ticks.saturating_sub(a.cpu_ticks) as f64 / ticks_per_second() as f64;
    ServerUsage {
        cpu_seconds,
        cpu_percent: if elapsed > 0.0 {
            100.0 * cpu_seconds / elapsed
        } else {
            0.0
        },
        rss_max_mib: rss_max as f64 / 1024.0,
        anon_max_mib: anon_max.map(|k| k as f64 / 1024.0),
        disk_write_bytes: match (a.write_bytes, b.write_bytes) {
            (Some(x), Some(y)) => Some(y.saturating_sub(x)),
            _ => None,
        },
        loopback_bytes: match (lo0, lo_bytes()) {
            (Some(x), Some(y)) => Some(y.saturating_sub(x)),
            _ => None,
        },
        samples,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_spaces_and_parens_in_name() {
        let line = "1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 100 0 0 0 70 30 5 5 20 0 1 0";
        assert_eq!(parse_stat(line), Some(110));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn status_io_and_netdev() {
        assert_eq!(parse_rss("Name:\tx\nVmRSS:\t   8120 kB\n"), Some(8120));
        assert_eq!(parse_rss("Name: x\n"), None);
        let status = "VmRSS:\t  79468 kB\nRssAnon:\t  41244 kB\nRssFile:\t  38224 kB\n";
        assert_eq!(parse_rss_anon(status), Some(41244));
        assert_eq!(parse_rss_anon("VmRSS:\t8120 kB\n"), None);
        assert_eq!(parse_io_write("rchar: 1\nwrite_bytes: 4096\n"), Some(4096));
        let dev = "Inter-|   Receive\n face |bytes packets errs drop fifo frame compressed multicast|bytes\n    lo: 1000 10 0 0 0 0 0 0 2000 10 0 0 0 0 0 0\n  eth0: 5 1 0 0 0 0 0 0 6 1 0 0 0 0 0 0\n";
        assert_eq!(parse_lo_bytes(dev), Some(3000));
    }

    #[test]
    fn samples_this_process() {
        let s = Sampler::start(std::process::id(), Duration::from_millis(5));
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(50) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let u = s.finish();
        assert!(x > 0);
        assert!(u.samples >= 2, "{u:?}");
        assert!(u.rss_max_mib > 0.0, "{u:?}");
        let anon = u.anon_max_mib.expect("RssAnon is read (Linux 4.5 on)");
        assert!(anon > 0.0 && anon <= u.rss_max_mib, "{u:?}");
    }
}
