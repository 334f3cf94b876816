//! CPU pinning: the server on one core, the load generator on another.
//!
//! Linux only (`sched_setaffinity`). Threads inherit the mask of the thread that creates them,
//! so pinning the harness's main thread before the runtime starts pins the whole load
//! generator, and a peer started from a pinned `pre_exec` inherits the server core.

use std::io;

/// Cores online on the machine (not only those this thread may use).
pub fn cores() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(1)
}

fn set_mask(tid: libc::pid_t, core: usize) -> io::Result<()> {
    if core >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "core number too large",
        ));
    }
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write inside it; the pointer and size
    // passed to sched_setaffinity describe that same value.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(core, &mut set);
        if libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Pins the calling thread (and so every thread it creates later) to `core`.
///
/// # Errors
/// The OS error when the core does not exist or the call is refused.
pub fn pin_current_thread(core: usize) -> io::Result<()> {
    set_mask(0, core)
}

/// Pins every thread of process `pid` to `core` (threads it creates later inherit it).
///
/// # Errors
/// When `/proc/<pid>/task` cannot be read; threads that exit meanwhile are skipped.
pub fn pin_process(pid: u32, core: usize) -> io::Result<()> {
    for entry in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let Some(tid) = entry?.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        // A thread may exit between listing and pinning; that is not an error.
        let _ = set_mask(tid, core);
    }
    Ok(())
}

/// The cores process or thread `tid` may run on (0 = the calling thread).
///
/// # Errors
/// The OS error from `sched_getaffinity`.
pub fn affinity(tid: u32) -> io::Result<Vec<usize>> {
    // SAFETY: as in `set_mask`; sched_getaffinity fills the set it is given.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(
            tid as libc::pid_t,
            std::mem::size_of::<libc::cpu_set_t>(),
            &mut set,
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// Where the server and the load run; `None` on a single-core machine (nothing to separate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Placement {
    /// Core of the server (the broker under test).
    pub server_core: usize,
    /// Core of the load generator (this process).
    pub load_core: usize,
}

impl Placement {
    /// Server on core 0, load on core 1, when there are at least two cores.
    pub fn default_for_machine() -> Option<Self> {
        (cores() >= 2).then_some(Self {
            server_core: 0,
            load_core: 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_and_read_back_in_a_thread() {
        let core = cores() - 1;
        std::thread::spawn(move || {
            pin_current_thread(core).unwrap();
            assert_eq!(affinity(0).unwrap(), vec![core]);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn missing_core_is_an_error() {
        std::thread::spawn(|| {
            assert!(pin_current_thread(1000).is_err() && pin_current_thread(100_000).is_err())
        })
        .join()
        .unwrap();
    }
}
