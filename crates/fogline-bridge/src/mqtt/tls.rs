//! TLS to the remote broker (`bridge_cafile`, `bridge_certfile`, `bridge_keyfile`).
//!
//! The MQTT client's own TLS would compile the `ring` crate (C) into the edge binary, which
//! builds without a C toolchain (docs/SECURITY.md). So the bridge runs TLS itself, with
//! fogline-net's connector (the graviola provider, as every fogline listener), and the client
//! speaks plain MQTT over a Unix socket to a relay: for each session a socket in a new
//! temporary directory only this user may enter, removed as soon as the client's one
//! connection is accepted (no other process can use the bridge's certificate through it),
//! then a TCP connection to the remote, the handshake, and bytes copied both ways until
//! either side ends. A directory per session, not one for the bridge's life: a long-lived
//! one could be swept from /tmp by its cleaner while the bridge runs.
//!
//! A failed handshake (or a TLS alert after it) closes the client's socket; its reason is
//! kept for the bridge's status ([`Session::failure`]), since the client only sees the
//! connection end.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fogline_net::tls::{explain, ClientTls, TlsConnector};
use parking_lot::Mutex;
use tokio::net::{TcpStream, UnixListener};

use crate::config::MqttConfig;

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
    task: tokio::task::JoinHandle<()>,
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
        // Made 0700: only this user may reach the socket in it.
        let dir = tempfile::Builder::new()
            .prefix("fogline-bridge-")
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
            task,
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

impl Drop for Session {
    fn drop(&mut self) {
        self.task.abort();
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
    let Ok((mut client, _)) = listener.accept().await else {
        return;
    };
    drop(listener);
    let _ = std::fs::remove_file(&path);
    let remote = match TcpStream::connect((host.as_str(), port)).await {
        Ok(tcp) => {
            // Small packets and acknowledgements must not wait for Nagle's algorithm.
            let _ = tcp.set_nodelay(true);
            connector.connect(tcp).await.map_err(|e| match explain(&e) {
                Some(why) => format!("TLS: {why}"),
                None => format!("TLS handshake with {host}:{port}: {e}"),
            })
        }
        Err(e) => Err(format!("connecting to {host}:{port}: {e}")),
    };
    match remote {
        Ok(mut remote) => {
            // With TLS 1.3 a refused client certificate is an alert after the handshake.
            if let Err(e) = tokio::io::copy_bidirectional(&mut client, &mut remote).await {
                if let Some(why) = explain(&e) {
                    *failure.lock() = Some(format!("TLS: {why}"));
                }
            }
        }
        Err(e) => *failure.lock() = Some(e),
    }
}
