//! The native protocol's listeners: bound on the transport layer, each connection served in
//! a task of its own, at most `max_connections` at once across them.

use std::sync::Arc;

use fogline_broker::Broker;
use fogline_net::transport::{accept_loop, AcceptOptions, BindError, Conn, Listener};
use tokio::sync::{watch, Semaphore};

use crate::config::NativeConfig;
use crate::connection::{self, Limits};

/// Frame overhead allowed on top of the message limit (topic, headers, framing).
const FRAME_SLACK: u32 = 256 * 1024;

/// The bound native-protocol front end of a node, ready to run.
pub struct NativeServer {
    broker: Broker,
    listeners: Vec<Listener>,
    config: NativeConfig,
}

impl NativeServer {
    /// Binds every address of `config.listen`.
    ///
    /// # Errors
    /// [`BindError`] naming the address that could not be bound.
    pub async fn bind(config: NativeConfig, broker: Broker) -> Result<NativeServer, BindError> {
        let listeners = Listener::bind_all(&config.listen).await?;
        Ok(NativeServer {
            broker,
            listeners,
            config,
        })
    }

    /// The bound addresses, TCP ones with their real port (`HOST:PORT` or `unix:PATH`).
    pub fn local_addrs(&self) -> Vec<String> {
        self.listeners.iter().map(Listener::local_addr).collect()
    }

    /// Serves until `stop` turns true; then stops accepting, closes the connections and
    /// returns once none holds the broker any more. Acknowledged records are stored by then.
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let limits = Limits {
            max_frame: (self.broker.max_message() as u32).saturating_add(FRAME_SLACK),
            max_pending_replies: self.config.max_pending_replies.as_u64() as usize,
            write_stall: self.config.write_stall,
            hello_timeout: self.config.hello_timeout,
        };
        let opts = AcceptOptions {
            limit: Some(Arc::new(Semaphore::new(self.config.max_connections.max(1)))),
            keepalive: Some(self.config.tcp_keepalive),
        };
        let mut loops = tokio::task::JoinSet::new();
        for l in self.listeners {
            let broker = self.broker.clone();
            loops.spawn(accept_loop(
                l,
                opts.clone(),
                stop.clone(),
                move |conn, peer| {
                    let broker = broker.clone();
                    async move {
                        match conn {
                            Conn::Tcp(s) => connection::serve_tcp(s, peer, broker, limits).await,
                            Conn::Unix(s) => connection::serve(s, peer, broker, limits).await,
                        }
                    }
                },
            ));
        }
        while loops.join_next().await.is_some() {}
    }
}
