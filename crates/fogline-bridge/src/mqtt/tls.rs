//! TLS to the remote broker (`bridge_cafile`, `bridge_certfile`, `bridge_keyfile`).
//!
//! The MQTT client's own TLS would compile the `ring` crate (C) into the edge binary, which
//! builds without a C toolchain (docs/SECURITY.md). So the bridge runs TLS itself, with
//! fogline-net's connector (the graviola provider, as every fogline listener), and the client
//! speaks plain MQTT over a Unix socket to a relay: for each session a socket in a new
//! temporary directory only this user may enter (0700), removed as soon as the client's one
//! connection is accepted, which must come from this process (its peer credentials: no
//! other process can use the bridge's certificate through it), then a TCP connection to the
//! remote, the handshake, and bytes copied both ways until either side ends. A session that
//! ends lets its relay finish what the client wrote (a DISCONNECT, the last PUBACKs) for a
//! moment before stopping it. A directory per session, not one for the bridge's life: a long-lived
//! one could be swept from /tmp by its cleaner while the bridge runs.
//!
//! A failed handshake (or a TLS alert after it) closes the client's socket; its reason is
//! kept for the bridge's status ([`Session::failure`]), since the client only sees the
//! connection end.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fogline_net::tls::{explain, ClientTls, TlsConnector};
use parking_lot::Mutex;
use tokio::net::{UnixListener, UnixStream};

use crate::config::MqttConfig;
use crate::dial::dial_tls;

/// What a bridge needs to reach its remote broker over TLS; loaded once, at start.
pub struct TlsRelay {
    connector: TlsConnector,
    remote: (String, u16),
}

/// The relay of one session: the socket the client connects to, and the relay's task
/// (ended with the session).
pub struct Session {
    path: PathBuf,
    failure: Arc<Mutex<Option<String>>>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// Removed with the session (after the task ends).
    _dir: tempfile::TempDir,
}

impl TlsRelay {
    /// The relay for `cfg` (which has `bridge_cafile`): its files loaded and checked.
    ///
    /// # Errors
    /// A file cannot be read or holds no usable certificate or key; the host is not a
    /// name TLS can check.
    pub fn new(cfg: &MqttConfig, cafile: &Path) -> Result<TlsRelay, String> {
        let remote = cfg.host_port()?;
        let settings = ClientTls {
            cafile: cafile.to_path_buf(),
            certfile: cfg.bridge_certfile.clone(),
            keyfile: cfg.bridge_keyfile.clone(),
            server_name: None,
        };
        let connector = TlsConnector::new(&settings, &remote.0).map_err(|e| e.to_string())?;
        Ok(TlsRelay { connector, remote })
    }

    /// Starts the relay of a new session; the client connects to [`Session::path`].
    ///
    /// # Errors
    /// The directory or the socket cannot be made.
    pub fn session(&self) -> Result<Session, String> {
        // Only this user may reach the socket in it.
        let dir = tempfile::Builder::new()
            .prefix("fogline-bridge-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .map_err(|e| format!("a directory for the TLS relay: {e}"))?;
        let path = dir.path().join("s.sock");
        let listener =
            UnixListener::bind(&path).map_err(|e| format!("the TLS relay's socket: {e}"))?;
        let failure = Arc::new(Mutex::new(None));
        let task = tokio::spawn(relay(
            listener,
            path.clone(),
            self.connector.clone(),
            self.remote.clone(),
            failure.clone(),
        ));
        Ok(Session {
            path,
            failure,
            task: Some(task),
            _dir: dir,
        })
    }
}

impl Session {
    /// The socket the client connects to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why the relay could not reach the remote broker, if it could not.
    pub fn failure(&self) -> Option<String> {
        self.failure.lock().clone()
    }
}

/// How long an ended session's relay may go on forwarding what the client wrote last.
const DRAIN: Duration = Duration::from_secs(1);

impl Drop for Session {
    fn drop(&mut self) {
        let Some(mut task) = self.task.take() else {
            return;
        };
        // The client's end is closed: the relay sends on what it read, closes the TLS
        // connection cleanly (close_notify) and ends; stopped if the remote keeps it open.
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    if tokio::time::timeout(DRAIN, &mut task).await.is_err() {
                        task.abort();
                    }
                });
            }
            Err(_) => task.abort(),
        }
    }
}

/// The first connection that comes from this process (rumqttc); any other is closed and
/// logged. `None` when the listener fails.
async fn accept_own(listener: &UnixListener) -> Option<UnixStream> {
    loop {
        let (client, _) = listener.accept().await.ok()?;
        match client.peer_cred().map(|c| c.pid()) {
            Ok(Some(pid)) if pid == std::process::id() as i32 => return Some(client),
            other => {
                tracing::warn!(peer = ?other, "MQTT bridge TLS relay: a connection from another process, closed");
            }
        }
    }
}

/// Accepts the client's connection, removes the socket, reaches the remote and copies.
async fn relay(
    listener: UnixListener,
    path: PathBuf,
    connector: TlsConnector,
    (host, port): (String, u16),
    failure: Arc<Mutex<Option<String>>>,
) {
    let Some(mut client) = accept_own(&listener).await else {
        return;
    };
    drop(listener);
    let _ = std::fs::remove_file(&path);
    match dial_tls(&connector, &host, port).await {
        Ok(mut remote) => {
            // With TLS 1.3 a refused client certificate is an alert after the handshake.
            if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut remote).await {
                if let Some(why) = explain(&e) {
                    *failure.lock() = Some(format!("{host}:{port}: TLS: {why}"));
                }
            }
        }
        Err(e) => *failure.lock() = Some(e),
    }
}

#[cfg(test)]
#[path = "../../../fogline-net/tests/pki/mod.rs"]
mod pki;

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's socket lies in a directory only this user may enter, and the relay
    /// serves this process only: another process's connection is closed, ours is taken.
    #[tokio::test]
    async fn only_this_process_reaches_the_relay() {
        let dir = tempfile::tempdir().unwrap();
        // Its openssl calls are checked there.
        let ca = pki::Pki::new(&dir.path().join("pki"), pki::Kind::Ec, "relay CA", "c").ca;
        let mut cfg = MqttConfig::new("127.0.0.1:1", None, vec!["a in 1".into()]);
        cfg.bridge_cafile = Some(ca.clone());
        let relay = TlsRelay::new(&cfg, &ca).unwrap();
        let session = relay.session().unwrap();
        let mode = std::fs::metadata(session.path().parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        drop(session);

        let listener = UnixListener::bind(dir.path().join("s.sock")).unwrap();
        let path = dir.path().join("s.sock");
        let mut other = std::process::Command::new("python3")
            .arg("-c")
            .arg(format!(
                "import socket,time; s=socket.socket(socket.AF_UNIX); s.connect({:?}); \
                 print('connected', flush=True); time.sleep(5)",
                path.display().to_string()
            ))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The other process's connection is queued first; ours after it is accepted.
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(other.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line.trim(), "connected");
        let accepted = tokio::spawn(async move { accept_own(&listener).await });
        let ours = UnixStream::connect(&path).await.unwrap();
        let got = accepted.await.unwrap().unwrap();
        assert_eq!(
            got.peer_cred().unwrap().pid(),
            Some(std::process::id() as i32)
        );
        drop(ours);
        let _ = other.kill();
        let _ = other.wait();
    }
}
