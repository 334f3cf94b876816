//! Starts the real `fogline serve` binary for the restart tests.
// Each test binary that includes this reads only the fields it needs.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A running server process and the addresses it printed. Dropping it kills
/// the process, so a test that panics midway leaves no server behind.
pub struct Served {
    pub child: Child,
    /// Native-protocol address.
    pub native: String,
    /// MQTT address.
    pub mqtt: String,
}

impl Served {
    /// Sends SIGKILL and reaps the process, as a crash would end it.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // Already reaped after `kill`; then both calls are harmless no-ops.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `fogline serve --storage mmap` on ephemeral native and MQTT ports,
/// with `extra` arguments, and waits until it has printed both addresses.
pub fn serve<I, S>(extra: I) -> Served
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut child = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .args([
            "serve",
            "--storage",
            "mmap",
            "--listen",
            "127.0.0.1:0",
            "--mqtt",
            "127.0.0.1:0",
        ])
        .args(extra)
        .env("FOGLINE_LOG", "warn")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("fogline serve starts");
    let stderr = child.stderr.take().expect("stderr piped");
    let mut lines = BufReader::new(stderr).lines();
    let (mut native, mut mqtt) = (None, None);
    while native.is_none() || mqtt.is_none() {
        let line = lines
            .next()
            .expect("server prints its addresses")
            .expect("readable stderr");
        if let Some(rest) = line.split(" serving on ").nth(1) {
            native = rest.split_whitespace().next().map(str::to_string);
        } else if let Some(rest) = line.strip_prefix("MQTT on ") {
            mqtt = rest.split(',').next().map(|a| a.trim().to_string());
        }
    }
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Served {
        child,
        native: native.expect("native address"),
        mqtt: mqtt.expect("MQTT address"),
    }
}
