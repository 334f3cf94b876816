//! Starting and stopping the systems under test as real processes.
//!
//! Peers start through `bench/peers/start.sh` (one source of truth for their settings) and
//! stop through `bench/peers/stop.sh`, by process id; fogline's own server starts from the
//! binary given in [`PeerEnv::fogline_exe`] (`fogline serve`). Every server process is
//! created with its CPU affinity set to the server core, so all its threads stay there.
//! A [`RunningPeer`] stops its process when dropped.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::driver::Durability;
use crate::pin;
use crate::system::System;

/// Errors starting a peer.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// The peer is not installed; the message names the install command.
    #[error("{0}")]
    Missing(String),
    /// It is installed but did not start.
    #[error("{system} did not start: {message}")]
    Start {
        /// Which system.
        system: System,
        /// What went wrong (the script's message or the server's).
        message: String,
    },
    /// Spawning or waiting failed.
    #[error("starting a peer: {0}")]
    Io(#[from] io::Error),
}

/// Where peers come from and where they run.
#[derive(Debug, Clone)]
pub struct PeerEnv {
    /// The folder of `start.sh` / `stop.sh`.
    pub scripts: PathBuf,
    /// A scratch folder; each peer gets a subfolder.
    pub work_dir: PathBuf,
    /// The core servers are pinned to (None: no pinning).
    pub server_core: Option<usize>,
    /// The `fogline` executable that serves (None: fogline cannot be started).
    pub fogline_exe: Option<PathBuf>,
}

/// `bench/peers` found from `$FOGLINE_BENCH_PEERS`, the current directory or its parents,
/// or the source tree this crate was built from.
pub fn default_scripts_dir() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FOGLINE_BENCH_PEERS") {
        return Some(PathBuf::from(p));
    }
    let mut dir = std::env::current_dir().ok();
    while let Some(d) = dir {
        let c = d.join("bench/peers");
        if c.join("start.sh").is_file() {
            return Some(c);
        }
        dir = d.parent().map(Path::to_path_buf);
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/peers");
    built.join("start.sh").is_file().then_some(built)
}

/// A base port such that `base..base + n` are free on 127.0.0.1 now.
pub fn free_ports(n: u16) -> io::Result<u16> {
    let mut rng = fastrand::Rng::new();
    for _ in 0..200 {
        let base = rng.u16(20_000..60_000);
        if (0..n).all(|i| TcpListener::bind(("127.0.0.1", base + i)).is_ok()) {
            return Ok(base);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AddrInUse,
        "no free port range found",
    ))
}

enum Process {
    Script { scripts: PathBuf },
    Child(Child),
    None,
}

/// A started system; stopped (by pid) on drop.
pub struct RunningPeer {
    /// Which system.
    pub system: System,
    /// `127.0.0.1:port` of its client listener.
    pub addr: String,
    /// Its server process (None for brokerless systems).
    pub pid: Option<u32>,
    /// Its folder (config, data, log).
    pub dir: PathBuf,
    process: Process,
}

impl RunningPeer {
    /// Starts `system` on free ports under `env.work_dir`.
    ///
    /// # Errors
    /// [`PeerError::Missing`] with the install command when it is not installed, or
    /// [`PeerError::Start`] when it does not come up.
    pub fn start(system: System, env: &PeerEnv, durability: Durability) -> Result<Self, PeerError> {
        let port = free_ports(3)?;
        let dir = env.work_dir.join(format!("{}-{port}", system.name()));
        std::fs::create_dir_all(&dir)?;
        let addr = format!("127.0.0.1:{port}");
        if let Some(peer) = system.peer_script_name() {
            return start_script(system, peer, env, durability, port, dir, addr);
        }
        match system {
            System::Fogline | System::FoglineMqtt => {
                start_fogline(system, env, durability, port, dir)
            }
            _ => Ok(Self {
                system,
                addr,
                pid: None,
                dir,
                process: Process::None,
            }),
        }
    }

    /// Stops the process now (also done on drop) and deletes its stored data (the logs stay):
    /// a full run writes tens of GB, which must not pile up system after system.
    pub fn stop(&mut self) {
        self.stop_process();
        let _ = std::fs::remove_dir_all(self.dir.join("data"));
    }

    fn stop_process(&mut self) {
        match std::mem::replace(&mut self.process, Process::None) {
            Process::Script { scripts } => {
                let _ = Command::new(scripts.join("stop.sh"))
                    .arg(&self.dir)
                    .stdout(Stdio::null())
                    .status();
            }
            Process::Child(mut child) => {
                // SIGTERM first so the server can shut down cleanly.
                // SAFETY: kill(2) with a pid we spawned and still own (not yet reaped).
                unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
                let t = Instant::now();
                while t.elapsed() < Duration::from_secs(5) {
                    if let Ok(Some(_)) = child.try_wait() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                let _ = child.kill();
                let _ = child.wait();
            }
            Process::None => {}
        }
    }
}

impl Drop for RunningPeer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn pinned(cmd: &mut Command, core: Option<usize>) {
    if let Some(core) = core {
        // SAFETY: the closure only makes the sched_setaffinity system call on the child's
        // own thread between fork and exec; it allocates only on the error path.
        unsafe {
            cmd.pre_exec(move || pin::pin_current_thread(core));
        }
    }
}

fn start_script(
    system: System,
    peer: &str,
    env: &PeerEnv,
    durability: Durability,
    port: u16,
    dir: PathBuf,
    addr: String,
) -> Result<RunningPeer, PeerError> {
    let mode = match durability {
        Durability::Volatile => "volatile",
        Durability::Persistent => "persistent",
    };
    let mut cmd = Command::new(env.scripts.join("start.sh"));
    cmd.arg(peer).arg(&dir).arg(port.to_string()).arg(mode);
    cmd.stdin(Stdio::null());
    pinned(&mut cmd, env.server_core);
    let out = cmd.output()?;
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    let mut peer = RunningPeer {
        system,
        addr,
        pid: None,
        dir,
        process: Process::Script {
            scripts: env.scripts.clone(),
        },
    };
    if out.status.code() == Some(3) {
        return Err(PeerError::Missing(stderr));
    }
    let pid = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse::<u32>()
        .ok();
    match (out.status.success(), pid) {
        (true, Some(pid)) => {
            if let Some(core) = env.server_core {
                // The process already inherited the mask; re-pinning existing threads is a
                // guard against a start script that changed it.
                let _ = pin::pin_process(pid, core);
            }
            peer.pid = Some(pid);
            Ok(peer)
        }
        _ => Err(PeerError::Start {
            system,
            message: stderr,
        }),
    }
}

fn start_fogline(
    system: System,
    env: &PeerEnv,
    durability: Durability,
    port: u16,
    dir: PathBuf,
) -> Result<RunningPeer, PeerError> {
    let Some(exe) = &env.fogline_exe else {
        return Err(PeerError::Missing(
            "fogline: no fogline executable to run `fogline serve` with".into(),
        ));
    };
    let storage = match durability {
        Durability::Volatile => "memory",
        Durability::Persistent => "mmap",
    };
    // Native protocol on `port`, MQTT on `port + 1` (never the default 1883).
    let native = format!("127.0.0.1:{port}");
    let mqtt = format!("127.0.0.1:{}", port + 1);
    let log = std::fs::File::create(dir.join("log"))?;
    let mut cmd = Command::new(exe);
    cmd.args([
        "serve",
        "--listen",
        &native,
        "--mqtt",
        &mqtt,
        "--storage",
        storage,
        // The admin API stays on, as deployed, on a port of its own.
        "--http",
        "127.0.0.1:0",
    ])
    .arg("--data-dir")
    .arg(dir.join("data"))
    .stdin(Stdio::null())
    .stdout(log.try_clone()?)
    .stderr(log);
    pinned(&mut cmd, env.server_core);
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let t = Instant::now();
    while TcpStream::connect(&native).is_err() || TcpStream::connect(&mqtt).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            let log = std::fs::read_to_string(dir.join("log")).unwrap_or_default();
            return Err(PeerError::Start {
                system,
                message: format!("exited with {status}: {log}"),
            });
        }
        if t.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(PeerError::Start {
                system,
                message: format!("not listening on {native} and {mqtt} after 10 s"),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let addr = if system == System::FoglineMqtt {
        mqtt
    } else {
        native
    };
    Ok(RunningPeer {
        system,
        addr,
        pid: Some(pid),
        dir,
        process: Process::Child(child),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopping_a_peer_deletes_its_data_and_keeps_its_log() {
        let work = tempfile::tempdir().unwrap();
        let env = PeerEnv {
            scripts: work.path().to_path_buf(),
            work_dir: work.path().to_path_buf(),
            server_core: None,
            fogline_exe: None,
        };
        // ZeroMQ is brokerless: nothing to start, the folder handling is the same.
        let mut p = RunningPeer::start(System::Zeromq, &env, Durability::Persistent).unwrap();
        std::fs::create_dir_all(p.dir.join("data/topic")).unwrap();
        std::fs::write(p.dir.join("data/topic/seg"), [0u8; 4096]).unwrap();
        std::fs::write(p.dir.join("log"), "kept").unwrap();
        p.stop();
        assert!(!p.dir.join("data").exists());
        assert!(p.dir.join("log").exists());
    }
}
