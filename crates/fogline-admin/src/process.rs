//! Readings of this process and its data directory, from `/proc` and `statvfs` (Linux).
//! A reading that fails is `None`: the API shows `null`, the metrics leave it out.

use std::path::Path;

/// The process's memory, CPU, threads and descriptors.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessReading {
    /// Resident set size, bytes (mapped log pages included).
    pub rss_bytes: Option<u64>,
    /// Anonymous resident memory (heap and stacks, no mapped files), bytes.
    pub anon_bytes: Option<u64>,
    /// CPU time used, user and system, seconds.
    pub cpu_seconds: Option<f64>,
    /// Threads.
    pub threads: Option<u64>,
    /// Open file descriptors.
    pub open_fds: Option<u64>,
}

/// Reads the process now.
pub fn read() -> ProcessReading {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |key: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        let n: u64 = line[key.len()..].split_whitespace().next()?.parse().ok()?;
        Some(n * 1024)
    };
    let threads = status
        .lines()
        .find(|l| l.starts_with("Threads:"))
        .and_then(|l| l["Threads:".len()..].trim().parse().ok());
    ProcessReading {
        rss_bytes: kib("VmRSS:"),
        anon_bytes: kib("RssAnon:"),
        cpu_seconds: cpu_seconds(),
        threads,
        open_fds: std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as u64),
    }
}

/// User plus system CPU time from `/proc/self/stat` (fields 14 and 15, in clock ticks).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) may hold spaces: count fields after its closing paren.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf reads a constant of the system.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (ticks > 0).then(|| (utime + stime) / ticks as f64)
}

/// Bytes free to unprivileged writers on the file system holding `dir`.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: an all-zero statvfs is a valid value for the call to overwrite.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a NUL-terminated string and `st` a valid, writable statvfs.
    let rc = unsafe { libc::statvfs(path.as_ptr(), &mut st) };
    // The fields are narrower than u64 on 32-bit boards.
    #[allow(clippy::useless_conversion)]
    let free = u64::from(st.f_bavail) * u64::from(st.f_frsize);
    (rc == 0).then_some(free)
}

/// Bytes the files under `dir` take on disk (allocated blocks; a preallocated segment
/// counts whole), walking at most `max_entries` entries. `None` when `dir` cannot be read.
pub fn dir_bytes(dir: &Path, max_entries: usize) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0u64;
    let mut seen = 0usize;
    let mut stack = vec![dir.to_path_buf()];
    let mut first = true;
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(_) if !first => continue,
            Err(_) => return None,
        };
        first = false;
        for e in entries.flatten() {
            seen += 1;
            if seen > max_entries {
                return Some(total);
            }
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else {
                total += m.blocks() * 512;
            }
        }
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_can_be_read() {
        let r = read();
        assert!(r.rss_bytes.is_some_and(|b| b > 0));
        assert!(r.anon_bytes.is_some());
        assert!(r.cpu_seconds.is_some_and(|s| s >= 0.0));
        assert!(r.threads.is_some_and(|t| t >= 1));
        assert!(r.open_fds.is_some_and(|n| n >= 3));
    }

    #[test]
    fn a_directory_is_measured() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("s")).unwrap();
        std::fs::write(dir.path().join("s/a"), vec![1u8; 10_000]).unwrap();
        let n = dir_bytes(dir.path(), 1000).unwrap();
        assert!(n >= 10_000, "{n}");
        assert!(free_bytes(dir.path()).is_some_and(|f| f > 0));
        assert_eq!(dir_bytes(&dir.path().join("missing"), 10), None);
    }
}
