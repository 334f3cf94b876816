//! MQTT listeners: bind the configured TCP addresses, open the durable
//! state, and serve each connection in its own task.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use fogline_broker::{Broker, StorageMode};
use tokio::net::TcpListener;

use crate::auth::{AllowAll, Authenticator};
use crate::config::MqttConfig;
use crate::shared::Shared;
use crate::store::{Store, StoreError};

/// Why the MQTT front end could not start.
#[derive(Debug, thiserror::Error)]
pub enum MqttError {
    /// An address is malformed or cannot be bound.
    #[error("cannot listen for MQTT on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The durable MQTT state cannot be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The bound MQTT front end of a node, ready to run.
pub struct MqttServer {
    shared: Arc<Shared>,
    tcp: Vec<TcpListener>,
    ws: Vec<TcpListener>,
}

impl MqttServer {
    /// Binds every listener of `config` and recovers the durable state
    /// (under `data_dir/mqtt/` unless the broker's storage is `memory`).
    /// Every client is admitted; see [`MqttServer::bind_with`].
    ///
    /// # Errors
    /// [`MqttError`] when an address cannot be bound or the state opened.
    pub async fn bind(config: MqttConfig, broker: Broker) -> Result<MqttServer, MqttError> {
        MqttServer::bind_with(config, broker, Arc::new(AllowAll)).await
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
        let tcp = bind_all(&config.listen).await?;
        let ws = bind_all(&config.ws_listen).await?;
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
        let shared = Shared::new(broker, config, auth, store);
        Ok(MqttServer { shared, tcp, ws })
    }

    /// The bound TCP addresses, with their real ports.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.tcp
            .iter()
            .filter_map(|l| l.local_addr().ok())
            .collect()
    }

    /// The bound WebSocket addresses, with their real ports.
    pub fn ws_addrs(&self) -> Vec<SocketAddr> {
        self.ws.iter().filter_map(|l| l.local_addr().ok()).collect()
    }

    /// Accepts and serves connections until `stop` completes; then closes
    /// every connection and returns once none holds the broker any more.
    pub async fn run_until(self, stop: impl std::future::Future<Output = ()>) {
        let (stopping, stopped) = tokio::sync::watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        for l in self.tcp {
            tasks.spawn(accept_loop(l, self.shared.clone(), false, stopped.clone()));
        }
        for l in self.ws {
            tasks.spawn(accept_loop(l, self.shared.clone(), true, stopped.clone()));
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

async fn bind_all(addrs: &[String]) -> Result<Vec<TcpListener>, MqttError> {
    let mut out = Vec::new();
    for addr in addrs {
        let hostport = addr.strip_prefix("tcp://").unwrap_or(addr);
        let l = TcpListener::bind(hostport)
            .await
            .map_err(|source| MqttError::Bind {
                addr: addr.clone(),
                source,
            })?;
        out.push(l);
    }
    Ok(out)
}

/// Connection tasks live in a `JoinSet` owned by the loop, so cancelling
/// the loop ends them too; once `stopped` turns true it ends them and waits.
async fn accept_loop(
    l: TcpListener,
    shared: Arc<Shared>,
    websocket: bool,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    let mut conns = tokio::task::JoinSet::new();
    loop {
        while conns.try_join_next().is_some() {}
        let accepted = tokio::select! {
            _ = stopped.wait_for(|s| *s) => break,
            a = l.accept() => a,
        };
        match accepted {
            Ok((sock, peer)) => {
                let _ = sock.set_nodelay(true);
                tracing::debug!(%peer, websocket, "MQTT connection");
                if websocket {
                    conns.spawn(crate::ws::serve(sock, shared.clone()));
                } else {
                    conns.spawn(crate::connection::serve_tcp(sock, shared.clone()));
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "MQTT accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    drop(shared);
    conns.shutdown().await;
}
