//! MQTT listeners: bind the configured TCP addresses, open the durable
//! state, and serve each connection in its own task.

use std::sync::Arc;

use fogline_broker::{Broker, StorageMode};
use fogline_net::tls::TlsAcceptor;
use fogline_net::transport::{accept_loop, AcceptOptions, BindError, Conn, Listener};

use crate::config::MqttConfig;
use crate::shared::Shared;
use crate::store::{Store, StoreError};
use fogline_auth::Authenticator;

/// Why the MQTT front end could not start.
#[derive(Debug, thiserror::Error)]
pub enum MqttError {
    /// An address is malformed or cannot be bound.
    #[error("MQTT: {0}")]
    Bind(#[from] BindError),
    /// The durable MQTT state cannot be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The bound MQTT front end of a node, ready to run.
pub struct MqttServer {
    shared: Arc<Shared>,
    tcp: Vec<Listener>,
    ws: Vec<Listener>,
    tls_tcp: Vec<Listener>,
    wss: Vec<Listener>,
    /// The acceptor of `tls_tcp` and `wss` (`None` when both are empty).
    tls: Option<Arc<TlsAcceptor>>,
}

impl MqttServer {
    /// Binds every listener of `config` (TCP or Unix sockets, on the transport layer) and
    /// recovers the durable state (under `data_dir/mqtt/` unless the broker's storage is
    /// `memory`). Clients are admitted by `password_file` and `allow_anonymous` (all of
    /// them when no authentication is configured); see [`MqttServer::bind_with`].
    ///
    /// # Errors
    /// [`MqttError`] when an address cannot be bound, the password file or the state read.
    pub async fn bind(config: MqttConfig, broker: Broker) -> Result<MqttServer, MqttError> {
        let guard = broker.guard().clone();
        MqttServer::bind_with(config, broker, guard).await
    }

    /// [`MqttServer::bind`] with an authentication hook.
    ///
    /// # Errors
    /// As [`MqttServer::bind`].
    pub async fn bind_with(
        config: MqttConfig,
        broker: Broker,
        auth: Arc<dyn Authenticator>,
    ) -> Result<MqttServer, MqttError> {
        let tls_addrs = [config.tls_listen.clone(), config.wss_listen.clone()].concat();
        let tls = fogline_net::transport::tls_for(&tls_addrs, &config.tls, config.connect_timeout)?;
        // The warning about other machines is ours: it depends on the authentication.
        let tcp = Listener::bind_all_unwarned(&config.listen).await?;
        let ws = Listener::bind_all_unwarned(&config.ws_listen).await?;
        let tls_tcp = Listener::bind_all_unwarned(&config.tls_listen).await?;
        let wss = Listener::bind_all_unwarned(&config.wss_listen).await?;
        let bc = broker.config();
        let store = match bc.storage {
            StorageMode::Memory => None,
            mode => {
                let (mut store, recovered) =
                    Store::open(&bc.data_dir.join("mqtt"), mode == StorageMode::Fsync)?;
                store.set_compact_min(config.state_compact_size.as_u64());
                if recovered.discarded > 0 {
                    tracing::warn!(
                        bytes = recovered.discarded,
                        "MQTT state: a torn tail was cut"
                    );
                }
                Some((store, recovered))
            }
        };
        if auth.admits_anonymous() {
            let all = [&tcp, &ws, &tls_tcp, &wss].into_iter().flatten();
            for a in all.filter_map(Listener::tcp_addr) {
                if !a.ip().is_loopback() {
                    tracing::warn!(
                        "MQTT on {a} accepts connections from other machines and admits \
                         clients without a password: set password_file (and allow_anonymous \
                         = false), or listen on 127.0.0.1 unless the network is trusted"
                    );
                }
            }
        }
        let shared = Shared::new(broker, config, auth, store);
        Ok(MqttServer {
            shared,
            tcp,
            ws,
            tls_tcp,
            wss,
            tls,
        })
    }

    /// Reads under the node's `budget` for read buffers, and closes a connection whose packet
    /// does not arrive whole within `frame_timeout` of its first byte (see
    /// `fogline_net::intake`). Without this the server has a budget of its own.
    pub fn with_intake(
        self,
        budget: Arc<fogline_net::intake::ReadBudget>,
        frame_timeout: std::time::Duration,
    ) -> Self {
        *self.shared.intake.lock() = (budget, frame_timeout);
        self
    }

    /// The bound MQTT addresses (`HOST:PORT` with the real port, or `unix:PATH`).
    pub fn local_addrs(&self) -> Vec<String> {
        self.tcp.iter().map(Listener::local_addr).collect()
    }

    /// The bound WebSocket addresses.
    pub fn ws_addrs(&self) -> Vec<String> {
        self.ws.iter().map(Listener::local_addr).collect()
    }

    /// The bound MQTT-over-TLS addresses.
    pub fn tls_addrs(&self) -> Vec<String> {
        self.tls_tcp.iter().map(Listener::local_addr).collect()
    }

    /// The bound secure WebSocket addresses.
    pub fn wss_addrs(&self) -> Vec<String> {
        self.wss.iter().map(Listener::local_addr).collect()
    }

    /// The TLS listeners' acceptor, to reload its certificates.
    pub fn tls(&self) -> Option<Arc<TlsAcceptor>> {
        self.tls.clone()
    }

    /// What the admin API and the metrics show of the sessions.
    pub fn stats(&self) -> MqttStats {
        MqttStats {
            shared: Arc::downgrade(&self.shared),
        }
    }

    /// Accepts and serves connections until `stop` completes; then closes every connection
    /// and returns once none holds the broker any more.
    pub async fn run_until(self, stop: impl std::future::Future<Output = ()>) {
        let (stopping, stopped) = tokio::sync::watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        let tls = AcceptOptions {
            tls: self.tls.clone(),
            ..AcceptOptions::default()
        };
        let tcp = self.tcp.into_iter().map(|l| (l, AcceptOptions::default()));
        let tls_tcp = self.tls_tcp.into_iter().map(|l| (l, tls.clone()));
        for (l, opts) in tcp.chain(tls_tcp) {
            let shared = self.shared.clone();
            tasks.spawn(accept_loop(l, opts, stopped.clone(), move |conn, peer| {
                let shared = shared.clone();
                async move {
                    match conn {
                        Conn::Tcp(s) => crate::connection::serve_tcp(s, peer, shared).await,
                        other => {
                            let p = fogline_broker::Protocol::Mqtt;
                            let id = other.username().map(str::to_owned);
                            crate::connection::serve(other, peer, p, id, shared).await
                        }
                    }
                }
            }));
        }
        let ws = self.ws.into_iter().map(|l| (l, AcceptOptions::default()));
        let wss = self.wss.into_iter().map(|l| (l, tls.clone()));
        for (l, opts) in ws.chain(wss) {
            let shared = self.shared.clone();
            tasks.spawn(accept_loop(l, opts, stopped.clone(), move |conn, peer| {
                crate::ws::serve(conn, peer, shared.clone())
            }));
        }
        if let Some(sys) = crate::sys::publisher(&self.shared) {
            tasks.spawn(sys.run(stopped.clone()));
        }
        let shared = Arc::downgrade(&self.shared);
        drop(self.shared);
        tokio::pin!(stop);
        loop {
            tokio::select! {
                _ = &mut stop => break,
                next = tasks.join_next() => if next.is_none() { break },
            }
        }
        // Each accept loop ends its connections and waits for them, so none holds the
        // broker (or spawns an offline session's task) after this.
        let _ = stopping.send(true);
        while tasks.join_next().await.is_some() {}
        if let Some(shared) = shared.upgrade() {
            shared.close().await;
        }
    }

    /// Accepts and serves connections until the returned future is dropped.
    pub async fn run(self) {
        self.run_until(std::future::pending()).await;
    }
}

/// A view of the MQTT sessions of a running front end (empty once it has stopped).
#[derive(Clone, Debug)]
pub struct MqttStats {
    shared: std::sync::Weak<Shared>,
}

/// Session counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SessionCounts {
    /// Sessions with a connected client.
    pub connected: usize,
    /// Sessions kept for a client that is not connected.
    pub offline: usize,
    /// Retained messages.
    pub retained: usize,
}

impl MqttStats {
    /// The sessions and retained messages now.
    pub fn sessions(&self) -> SessionCounts {
        self.shared
            .upgrade()
            .map_or_else(SessionCounts::default, |s| s.counts())
    }
}
