//! The admin API's listeners: bound on the transport layer (like every listener of the
//! node, so TLS comes to it with the others), each connection served by hyper (HTTP/1.1).

use std::sync::Arc;

use fogline_auth::Authenticator as _;
use fogline_net::tls::TlsAcceptor;
use fogline_net::transport::{accept_loop, AcceptOptions, BindError, Conn, Listener};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::sync::{watch, Semaphore};

use crate::config::AdminConfig;
use crate::state::AdminState;

/// Routes another component serves on the admin API, with their description: a JSON
/// document holding `paths` (and `components.schemas`) in OpenAPI 3 form, merged into
/// `/api/v1/openapi.json`.
pub struct ExtraRoutes {
    /// The routes, their state applied.
    pub router: axum::Router,
    /// Their description.
    pub openapi: &'static str,
}

/// The bound admin API, ready to run.
pub struct AdminServer {
    listeners: Vec<Listener>,
    tls_listeners: Vec<Listener>,
    tls: Option<Arc<TlsAcceptor>>,
    router: axum::Router,
    config: AdminConfig,
}

impl AdminServer {
    /// Binds every address of `config.listen` and `config.tls_listen` and builds the routes over `state`, with
    /// `extra` routes of other components merged in (and their descriptions into the API's).
    ///
    /// # Errors
    /// [`BindError`] naming the address that could not be bound, or the TLS setting or
    /// file that cannot be used.
    ///
    /// # Panics
    /// An extra description that is not a JSON object (a component's constant, tested in
    /// its crate).
    pub async fn bind(
        config: AdminConfig,
        state: AdminState,
        extra: Vec<ExtraRoutes>,
    ) -> Result<AdminServer, BindError> {
        let tls = fogline_net::transport::tls_for(
            &config.tls_listen,
            &config.tls,
            config.header_read_timeout,
        )?;
        let auth = crate::auth::HttpAuth {
            guard: state.broker.guard().clone(),
            token: (!config.token.is_empty()).then(|| config.token.as_str().into()),
        };
        // Other machines are warned about only when anyone may use the API.
        let open = auth.token.is_none() && auth.guard.admits_anonymous();
        let bind = |addrs: &[String]| {
            let addrs = addrs.to_vec();
            async move {
                if open {
                    Listener::bind_all(&addrs).await
                } else {
                    Listener::bind_all_unwarned(&addrs).await
                }
            }
        };
        let listeners = bind(&config.listen).await?;
        let tls_listeners = bind(&config.tls_listen).await?;
        let docs: Vec<&str> = extra.iter().map(|e| e.openapi).collect();
        let openapi = crate::api::merged_openapi(&docs);
        let mut router = crate::api::router(state, openapi);
        for e in extra {
            router = router.merge(e.router);
        }
        let router = router.layer(axum::middleware::from_fn_with_state(
            auth,
            crate::auth::require,
        ));
        Ok(AdminServer {
            listeners,
            tls_listeners,
            tls,
            router,
            config,
        })
    }

    /// The bound addresses (`HOST:PORT` with the real port, or `unix:PATH`).
    pub fn local_addrs(&self) -> Vec<String> {
        self.listeners.iter().map(Listener::local_addr).collect()
    }

    /// The bound HTTPS addresses.
    pub fn tls_addrs(&self) -> Vec<String> {
        self.tls_listeners
            .iter()
            .map(Listener::local_addr)
            .collect()
    }

    /// The HTTPS listeners' acceptor, to reload its certificates.
    pub fn tls(&self) -> Option<Arc<TlsAcceptor>> {
        self.tls.clone()
    }

    /// Serves until `stop` turns true, then closes every connection (live feeds included).
    pub async fn run(self, stop: watch::Receiver<bool>) {
        let opts = AcceptOptions {
            limit: Some(Arc::new(Semaphore::new(self.config.max_connections.max(1)))),
            keepalive: None,
            tls: None,
        };
        let mut loops = tokio::task::JoinSet::new();
        for (l, opts) in opts.with_tls(self.listeners, self.tls_listeners, self.tls.clone()) {
            let router = self.router.clone();
            let timeout = self.config.header_read_timeout;
            loops.spawn(accept_loop(l, opts, stop.clone(), move |conn, peer| {
                serve(conn, peer, router.clone(), timeout)
            }));
        }
        while loops.join_next().await.is_some() {}
    }
}

/// Serves one connection; one that sends no complete request head within `timeout` (also
/// between requests) is closed, so silent clients cannot hold every slot.
async fn serve(conn: Conn, peer: String, router: axum::Router, timeout: std::time::Duration) {
    let router = match conn.username() {
        Some(cn) => router.layer(axum::Extension(crate::auth::CertUser(cn.to_owned()))),
        None => router,
    };
    let service = TowerToHyperService::new(router);
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(timeout)
        .serve_connection(TokioIo::new(conn), service)
        .await;
    if let Err(e) = served {
        tracing::debug!(%peer, error = %e, "admin connection ended");
    }
}
