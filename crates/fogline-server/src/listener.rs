//! Listeners: accept connections on TCP and Unix sockets and serve each in
//! its own task, at most `max_connections` at once.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use fogline_broker::{Broker, BrokerError};
use fogline_mqtt::{MqttError, MqttServer};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::Semaphore;

use crate::config::Config;
use crate::connection::{self, Limits};

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The broker could not open its streams.
    #[error(transparent)]
    Broker(#[from] BrokerError),
    /// The MQTT front end could not start.
    #[error(transparent)]
    Mqtt(#[from] MqttError),
    /// A listen address is malformed or cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

/// A bound server, ready to run.
pub struct Server {
    broker: Broker,
    listeners: Vec<Listener>,
    mqtt: MqttServer,
    config: Config,
}

/// Frame overhead allowed on top of the message limit (topic, headers, framing).
const FRAME_SLACK: u32 = 256 * 1024;

impl Server {
    /// Opens the broker (recovering every stream's log) and binds every listener.
    ///
    /// # Errors
    /// [`ServerError`] when a stream cannot be opened or an address bound.
    pub async fn bind(config: Config) -> Result<Server, ServerError> {
        let (broker, reports) = Broker::open(config.broker.clone())?;
        for (stream, report) in reports {
            tracing::info!(stream, %report, "stream opened");
        }
        let mut listeners = Vec::new();
        for addr in &config.server.listen {
            let err = |source| ServerError::Bind {
                addr: addr.clone(),
                source,
            };
            if let Some(path) = addr.strip_prefix("unix:") {
                let path = PathBuf::from(path);
                // A socket file left by a previous run would make bind fail.
                if std::fs::symlink_metadata(&path).is_ok_and(|m| is_socket(&m)) {
                    let _ = std::fs::remove_file(&path);
                }
                listeners.push(Listener::Unix(
                    UnixListener::bind(&path).map_err(err)?,
                    path,
                ));
            } else {
                let hostport = addr.strip_prefix("tcp://").unwrap_or(addr);
                listeners.push(Listener::Tcp(
                    TcpListener::bind(hostport).await.map_err(err)?,
                ));
            }
        }
        let mqtt = MqttServer::bind(config.mqtt.clone(), broker.clone()).await?;
        Ok(Server {
            broker,
            listeners,
            mqtt,
            config,
        })
    }

    /// The broker this server serves (for in-process front ends and tests).
    pub fn broker(&self) -> &Broker {
        &self.broker
    }

    /// The bound addresses, TCP ones with their real port (`HOST:PORT` or `unix:PATH`).
    pub fn local_addrs(&self) -> Vec<String> {
        self.listeners
            .iter()
            .map(|l| match l {
                Listener::Tcp(t) => t.local_addr().map(|a| a.to_string()).unwrap_or_default(),
                Listener::Unix(_, p) => format!("unix:{}", p.display()),
            })
            .collect()
    }

    /// The bound MQTT (TCP) addresses, with their real ports.
    pub fn mqtt_addrs(&self) -> Vec<std::net::SocketAddr> {
        self.mqtt.local_addrs()
    }

    /// The bound MQTT-over-WebSocket addresses, with their real ports.
    pub fn mqtt_ws_addrs(&self) -> Vec<std::net::SocketAddr> {
        self.mqtt.ws_addrs()
    }

    /// Serves until `shutdown` completes; then stops accepting, closes the
    /// native connections and returns. Acknowledged records are already
    /// stored by then, and no native connection holds the broker any more.
    pub async fn run(self, shutdown: impl Future<Output = ()>) {
        let limits = Limits {
            max_frame: (self.broker.max_message() as u32).saturating_add(FRAME_SLACK),
            max_pending_replies: self.config.server.max_pending_replies.as_u64() as usize,
            write_stall: self.config.server.write_stall,
            hello_timeout: self.config.server.hello_timeout,
        };
        let permits = Arc::new(Semaphore::new(self.config.server.max_connections.max(1)));
        let keepalive = self.config.server.tcp_keepalive;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        for l in self.listeners {
            let broker = self.broker.clone();
            let permits = permits.clone();
            let stopped = stopped.clone();
            tasks.spawn(accept_loop(l, broker, permits, limits, keepalive, stopped));
        }
        let mut mqtt_stopped = stopped.clone();
        let mqtt = tokio::spawn(self.mqtt.run_until(async move {
            let _ = mqtt_stopped.wait_for(|s| *s).await;
        }));
        let retention = tokio::spawn(retention_loop(self.broker.clone(), stopped.clone()));
        shutdown.await;
        tracing::info!("shutting down");
        let _ = stop.send(true);
        while tasks.join_next().await.is_some() {}
        let _ = mqtt.await;
        // Not aborted: a retention pass under way on a blocking thread holds the broker,
        // and the server is not stopped until it lets go.
        let _ = retention.await;
        // The connections closed their consumers: their last positions reach the disk.
        let broker = self.broker.clone();
        let _ = tokio::task::spawn_blocking(move || broker.sync_positions()).await;
    }
}

fn is_socket(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    m.file_type().is_socket()
}

/// One accepted socket of either kind.
enum Accepted {
    Tcp(tokio::net::TcpStream),
    Unix(tokio::net::UnixStream),
}

impl Listener {
    async fn accept(&self) -> std::io::Result<Accepted> {
        match self {
            Listener::Tcp(t) => t.accept().await.map(|(s, _)| Accepted::Tcp(s)),
            Listener::Unix(u, _) => u.accept().await.map(|(s, _)| Accepted::Unix(s)),
        }
    }
}

/// Accepts until `stopped` turns true, then closes every connection it
/// started (their tasks live in `conns`, so none outlives the server).
async fn accept_loop(
    l: Listener,
    broker: Broker,
    permits: Arc<Semaphore>,
    limits: Limits,
    keepalive: Duration,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        while conns.try_join_next().is_some() {}
        let permit = tokio::select! {
            _ = stopped.wait_for(|s| *s) => break,
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            _ = stopped.wait_for(|s| *s) => break,
            a = l.accept() => a,
        };
        let broker = broker.clone();
        match accepted {
            Ok(Accepted::Tcp(sock)) => {
                let _ = sock.set_nodelay(true);
                let ka = socket2::TcpKeepalive::new()
                    .with_time(keepalive)
                    .with_interval(keepalive);
                let _ = socket2::SockRef::from(&sock).set_tcp_keepalive(&ka);
                conns.spawn(async move {
                    connection::serve_tcp(sock, broker, limits).await;
                    drop(permit);
                });
            }
            Ok(Accepted::Unix(sock)) => {
                conns.spawn(async move {
                    connection::serve(sock, broker, limits).await;
                    drop(permit);
                });
            }
            Err(e) => accept_failed(e).await,
        }
    }
    conns.shutdown().await;
}

/// Accept errors (out of file descriptors, aborted handshakes) are
/// transient: log, back off briefly, keep serving.
async fn accept_failed(e: std::io::Error) {
    tracing::warn!(error = %e, "accept failed");
    tokio::time::sleep(Duration::from_millis(50)).await;
}

async fn retention_loop(broker: Broker, mut stopped: tokio::sync::watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(Duration::from_secs(10));
    loop {
        tokio::select! {
            _ = stopped.wait_for(|s| *s) => return,
            _ = tick.tick() => {}
        }
        let b = broker.clone();
        if tokio::task::spawn_blocking(move || b.enforce_retention())
            .await
            .is_err()
        {
            tracing::warn!("retention task panicked");
        }
    }
}
