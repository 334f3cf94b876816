//! The native protocol's listeners: bound on the transport layer, each connection served in
//! a task of its own, at most `max_connections` at once across them.

use std::sync::Arc;

use std::time::Duration;

use fogline_auth::Authenticator as _;
use fogline_broker::Broker;
use fogline_net::intake::ReadBudget;
use fogline_net::tls::TlsAcceptor;
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
    /// TLS listeners and their acceptor (`None` when there is none).
    tls_listeners: Vec<Listener>,
    tls: Option<Arc<TlsAcceptor>>,
    config: NativeConfig,
    budget: Arc<ReadBudget>,
    frame_timeout: Duration,
}

/// The read budget a server has when none is given: 64 MiB.
pub const DEFAULT_READ_BUDGET: usize = 64 << 20;
/// The frame time limit a server has when none is given.
pub const DEFAULT_FRAME_TIMEOUT: Duration = Duration::from_secs(30);

impl NativeServer {
    /// Binds every address of `config.listen` and `config.tls_listen`.
    ///
    /// # Errors
    /// [`BindError`] naming the address that could not be bound, or the TLS setting or
    /// file that cannot be used.
    pub async fn bind(config: NativeConfig, broker: Broker) -> Result<NativeServer, BindError> {
        let tls =
            fogline_net::transport::tls_for(&config.tls_listen, &config.tls, config.hello_timeout)?;
        // Other machines are warned about only when anyone may connect (`[auth]`).
        let (listeners, tls_listeners) = if broker.guard().admits_anonymous() {
            (
                Listener::bind_all(&config.listen).await?,
                Listener::bind_all(&config.tls_listen).await?,
            )
        } else {
            (
                Listener::bind_all_unwarned(&config.listen).await?,
                Listener::bind_all_unwarned(&config.tls_listen).await?,
            )
        };
        Ok(NativeServer {
            broker,
            listeners,
            tls_listeners,
            tls,
            config,
            budget: ReadBudget::new(DEFAULT_READ_BUDGET),
            frame_timeout: DEFAULT_FRAME_TIMEOUT,
        })
    }

    /// Reads under the node's `budget` for read buffers, and closes a connection whose frame
    /// does not arrive whole within `frame_timeout` of its first byte (see
    /// `fogline_net::intake`). Without this the server has a budget of its own.
    pub fn with_intake(mut self, budget: Arc<ReadBudget>, frame_timeout: Duration) -> Self {
        self.budget = budget;
        self.frame_timeout = frame_timeout;
        self
    }

    /// The bound addresses, TCP ones with their real port (`HOST:PORT` or `unix:PATH`).
    pub fn local_addrs(&self) -> Vec<String> {
        self.listeners.iter().map(Listener::local_addr).collect()
    }

    /// The bound TLS addresses.
    pub fn tls_addrs(&self) -> Vec<String> {
        self.tls_listeners
            .iter()
            .map(Listener::local_addr)
            .collect()
    }

    /// The TLS listeners' acceptor, to reload its certificates.
    pub fn tls(&self) -> Option<Arc<TlsAcceptor>> {
        self.tls.clone()
    }

    /// Serves until `stop` turns true; then stops accepting, closes the connections and
    /// returns once none holds the broker any more. Acknowledged records are stored by then.
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let limits = Limits {
            max_frame: (self.broker.max_message() as u32).saturating_add(FRAME_SLACK),
            max_pending_replies: self.config.max_pending_replies.as_u64() as usize,
            write_stall: self.config.write_stall,
            hello_timeout: self.config.hello_timeout,
            frame_timeout: self.frame_timeout,
        };
        let opts = AcceptOptions {
            limit: Some(Arc::new(Semaphore::new(self.config.max_connections.max(1)))),
            keepalive: Some(self.config.tcp_keepalive),
            tls: None,
        };
        let mut loops = tokio::task::JoinSet::new();
        for (l, opts) in opts.with_tls(self.listeners, self.tls_listeners, self.tls.clone()) {
            let broker = self.broker.clone();
            let budget = self.budget.clone();
            loops.spawn(accept_loop(l, opts, stop.clone(), move |conn, peer| {
                let (broker, budget) = (broker.clone(), budget.clone());
                async move {
                    match conn {
                        Conn::Tcp(s) => {
                            connection::serve_tcp(s, peer, broker, limits, budget).await
                        }
                        other => {
                            let id = other.username().map(str::to_owned);
                            connection::serve(other, peer, broker, limits, budget, id).await
                        }
                    }
                }
            }));
        }
        while loops.join_next().await.is_some() {}
    }
}
