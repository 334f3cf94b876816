//! Server processes a subcommand starts itself: pinned to the server core from their first
//! instruction, and stopped (SIGTERM, then SIGKILL) by process id when dropped.

use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::bail;
use fogline_bench::pin;

/// A child process stopped (SIGTERM, then SIGKILL) by pid when dropped.
pub(crate) struct Proc(pub(crate) Child);

impl Proc {
    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // SAFETY: kill(2) on a child we spawned and have not reaped.
        unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Makes `cmd` start on `core` (every thread it creates inherits the mask).
pub(crate) fn pinned(cmd: &mut Command, core: Option<usize>) {
    if let Some(core) = core {
        // SAFETY: only the sched_setaffinity system call runs between fork and exec.
        unsafe {
            cmd.pre_exec(move || pin::pin_current_thread(core));
        }
    }
}

/// Waits until `addr` accepts connections; an error with the log once the process exited,
/// or after 30 s.
pub(crate) fn wait_listening(
    addr: &str,
    proc: &mut Proc,
    what: &str,
    log: &Path,
) -> anyhow::Result<()> {
    let t = Instant::now();
    while TcpStream::connect(addr).is_err() {
        if let Ok(Some(status)) = proc.0.try_wait() {
            let log = std::fs::read_to_string(log).unwrap_or_default();
            bail!("{what} exited with {status}: {log}");
        }
        if t.elapsed() > Duration::from_secs(30) {
            bail!("{what} not listening on {addr} after 30 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}
