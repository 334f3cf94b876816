//! Starts the real `fogline serve` binary for the restart tests.
// Each test binary that includes this reads only the fields it needs.
#![allow(dead_code)]

pub mod kafka;

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
    /// The admin API's address (`HOST:PORT`), when it serves one.
    pub http: Option<String>,
    /// Every line the server wrote to stderr (warnings and errors: it runs with
    /// `FOGLINE_LOG=warn`), as it arrives.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Served {
    /// Sends SIGKILL and reaps the process, as a crash would end it.
    pub fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }
}

impl Served {
    /// Sends SIGTERM and waits up to `within` for the process to exit: how long it took,
    /// or `None` when it still runs (dropping it kills it then).
    pub fn terminate(&mut self, within: std::time::Duration) -> Option<std::time::Duration> {
        let started = std::time::Instant::now();
        // SAFETY: kill(2) on our own child's pid, which it keeps until reaped below.
        let rc = unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        assert_eq!(rc, 0, "SIGTERM");
        while started.elapsed() < within {
            if self.child.try_wait().expect("waitable").is_some() {
                return Some(started.elapsed());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        // Already reaped after `kill`; then both calls are harmless no-ops.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `fogline serve` (mmap storage unless `extra` names another) on ephemeral native, MQTT and HTTP ports
/// (later `extra` arguments may name others), and waits until it has printed its
/// addresses.
pub fn serve<I, S>(extra: I) -> Served
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    serve_via(&[], extra)
}

/// [`serve`] with the configuration `text`, written to `dir/fogline.toml`, and its data in
/// `dir/data`.
pub fn serve_config(dir: &std::path::Path, text: &str) -> Served {
    let config = dir.join("fogline.toml");
    std::fs::write(&config, text).expect("write the configuration");
    serve([
        OsStr::new("--config"),
        config.as_os_str(),
        OsStr::new("--data-dir"),
        dir.join("data").as_os_str(),
    ])
}

/// [`serve`] run through `wrapper`, a command that is given the fogline binary and its
/// arguments to run (as `unshare -m sh -c '...; exec "$0" "$@"'` does).
pub fn serve_via<I, S>(wrapper: &[&OsStr], extra: I) -> Served
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let bin = OsStr::new(env!("CARGO_BIN_EXE_fogline"));
    let (program, before): (&OsStr, Vec<&OsStr>) = match wrapper.split_first() {
        Some((p, rest)) => (p, rest.iter().copied().chain([bin]).collect()),
        None => (bin, Vec::new()),
    };
    let extra: Vec<std::ffi::OsString> = extra.into_iter().map(|a| a.as_ref().to_owned()).collect();
    // mmap storage unless the caller names another.
    let storage = if extra.iter().any(|a| a == "--storage") {
        vec![]
    } else {
        vec!["--storage", "mmap"]
    };
    let mut child = Command::new(program)
        .args(before)
        .arg("serve")
        .args(storage)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--mqtt",
            "127.0.0.1:0",
            "--http",
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
    let (mut native, mut mqtt, mut http) = (None, None, None);
    // The banner: a "serving" line, then one line per listener; the first line after it
    // that is not a listener ends it.
    let mut in_banner = false;
    let mut banner = Vec::new();
    loop {
        let line = lines
            .next()
            .expect("server prints its addresses")
            .expect("readable stderr");
        banner.push(line.clone());
        if line.contains(") serving (storage ") {
            in_banner = true;
            continue;
        }
        if !in_banner {
            continue;
        }
        let Some(listener) = line.strip_prefix("  ") else {
            break;
        };
        let mut words = listener.split_whitespace();
        match (words.next(), words.next()) {
            (Some("native"), Some("protocol")) => native = words.next().map(str::to_string),
            (Some("MQTT"), Some(a)) if !a.starts_with('(') => mqtt = Some(a.to_string()),
            (Some("dashboard"), Some(url)) => {
                http = url
                    .strip_prefix("http://")
                    .map(|u| u.trim_end_matches('/').to_string())
            }
            _ => {}
        }
        if native.is_some() && mqtt.is_some() && http.is_some() {
            break;
        }
    }
    // Keep draining stderr so the server never blocks on a full pipe.
    let log = std::sync::Arc::new(std::sync::Mutex::new(banner));
    let keep = log.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            keep.lock().unwrap().push(line);
        }
    });
    Served {
        child,
        native: native.expect("native address"),
        mqtt: mqtt.unwrap_or_default(),
        http,
        log,
    }
}

/// One request to a server's admin API (`http` is its `HOST:PORT`), asserted to succeed;
/// its JSON answer (`null` when the body is not JSON).
pub async fn admin(
    http: &str,
    method: &str,
    path: &str,
    body: Option<serde_json::Value>,
) -> serde_json::Value {
    let body = body.map(|b| b.to_string().into()).unwrap_or_default();
    let url = format!("http://{http}{path}");
    let r = fogline_rules::sink::request(method, &url, body, std::time::Duration::from_secs(10))
        .await
        .unwrap();
    assert!(
        r.status < 300,
        "{method} {path}: {} {}",
        r.status,
        String::from_utf8_lossy(&r.body)
    );
    serde_json::from_slice(&r.body).unwrap_or(serde_json::Value::Null)
}

/// One request to a server's admin API as `user` (HTTP basic auth; `None`: no
/// credentials): its status and body.
pub async fn admin_as(
    http: &str,
    method: &str,
    path: &str,
    user: Option<(&str, &str)>,
) -> (u16, String) {
    use base64::Engine as _;
    let url = fogline_rules::sink::Url::parse(&format!("http://{http}{path}")).unwrap();
    let headers: Vec<(String, String)> = user
        .map(|(u, p)| {
            let pair = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
            ("authorization".to_owned(), format!("Basic {pair}"))
        })
        .into_iter()
        .collect();
    let r = fogline_rules::sink::Connection::new(url)
        .send(
            method,
            &headers,
            Default::default(),
            std::time::Duration::from_secs(10),
        )
        .await
        .unwrap();
    (r.status, String::from_utf8_lossy(&r.body).into_owned())
}

/// The status of [`admin_as`].
pub async fn admin_status(http: &str, method: &str, path: &str, user: Option<(&str, &str)>) -> u16 {
    admin_as(http, method, path, user).await.0
}

/// The body of a GET of [`admin_as`], asserted to succeed.
pub async fn admin_get_auth(http: &str, path: &str, user: Option<(&str, &str)>) -> String {
    let (status, body) = admin_as(http, "GET", path, user).await;
    assert_eq!(status, 200, "GET {path}: {body}");
    body
}
