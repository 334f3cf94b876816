//! The transport layer every listener of a node stands on: endpoints (`HOST:PORT` for TCP,
//! `unix:/PATH` for a Unix socket), binding them, and one accept loop that serves each
//! connection in a task of its own, holds at most a given number at once, and on shutdown
//! stops accepting, ends every connection it started and waits for them. The native
//! protocol, MQTT, MQTT over WebSocket and the HTTP admin API all accept through it, so
//! what a transport needs is added here once, not per listener: TLS is an accept option
//! (see [`crate::tls`]), its handshake run in the connection's task, bounded in time.

use std::future::Future;
use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::{watch, Semaphore};

use crate::tls::{ServerStream, TlsAcceptor, TlsConfig, TlsError};

/// Where a listener listens or a client connects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// `HOST:PORT` (also written `tcp://HOST:PORT`).
    Tcp(String),
    /// `unix:/PATH`.
    Unix(PathBuf),
}

impl Endpoint {
    /// Parses `HOST:PORT`, `tcp://HOST:PORT` or `unix:/PATH`.
    ///
    /// # Errors
    /// An empty address, or a TCP address without a port.
    pub fn parse(addr: &str) -> Result<Endpoint, String> {
        if let Some(path) = addr.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(format!("{addr:?}: a Unix socket needs a path (unix:/PATH)"));
            }
            return Ok(Endpoint::Unix(PathBuf::from(path)));
        }
        let hostport = addr.strip_prefix("tcp://").unwrap_or(addr);
        match hostport.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                Ok(Endpoint::Tcp(hostport.to_string()))
            }
            _ => Err(format!(
                "{addr:?}: expected HOST:PORT (e.g. 127.0.0.1:7766) or unix:/PATH"
            )),
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Tcp(a) => f.write_str(a),
            Endpoint::Unix(p) => write!(f, "unix:{}", p.display()),
        }
    }
}

/// A bound listener.
#[derive(Debug)]
pub enum Listener {
    /// A TCP listener.
    Tcp(TcpListener),
    /// A Unix-socket listener and its path.
    Unix(UnixListener, PathBuf),
}

/// An accepted connection.
#[derive(Debug)]
pub enum Conn {
    /// Over TCP (`nodelay` set, keep-alive as asked).
    Tcp(TcpStream),
    /// Over a Unix socket.
    Unix(UnixStream),
    /// TLS over either, the handshake done.
    Tls(Box<TlsConn>),
}

/// A TLS connection and who its client certificate says the peer is.
#[derive(Debug)]
pub struct TlsConn {
    stream: ServerStream<Conn>,
    username: Option<String>,
}

impl Conn {
    /// The username the transport established: the client certificate's CN on a TLS
    /// listener with `use_identity_as_username`; `None` otherwise.
    pub fn username(&self) -> Option<&str> {
        match self {
            Conn::Tls(t) => t.username.as_deref(),
            _ => None,
        }
    }

    /// True for a TLS connection.
    pub fn is_tls(&self) -> bool {
        matches!(self, Conn::Tls(_))
    }
}

/// Why a listener could not be bound.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The address is malformed.
    #[error("{0}")]
    Address(String),
    /// The OS refused it (in use, no permission, no such interface).
    #[error("cannot listen on {addr}: {source}")]
    Io {
        /// The address.
        addr: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The TLS settings of TLS listeners cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// The acceptor for `addrs` when there are any: TLS listeners need certificates, none
/// need none.
///
/// # Errors
/// [`BindError::Tls`] when the settings or files cannot be used.
pub fn tls_for(
    addrs: &[String],
    settings: &TlsConfig,
    handshake_timeout: Duration,
) -> Result<Option<Arc<TlsAcceptor>>, BindError> {
    if addrs.is_empty() {
        return Ok(None);
    }
    Ok(Some(Arc::new(TlsAcceptor::new(
        settings.clone(),
        handshake_timeout,
    )?)))
}

impl Listener {
    /// Binds `addr` (see [`Endpoint::parse`]). A Unix socket file left by an earlier run is
    /// replaced; any other file at that path is not.
    ///
    /// # Errors
    /// [`BindError`] naming the address.
    pub async fn bind(addr: &str) -> Result<Listener, BindError> {
        let l = Listener::bind_unwarned(addr).await?;
        if let Some(w) = l.tcp_addr().and_then(exposure) {
            tracing::warn!("{w}");
        }
        Ok(l)
    }

    /// [`Listener::bind`] without the warning about other machines, for a caller that
    /// knows whether its listener authenticates clients and warns itself.
    ///
    /// # Errors
    /// As [`Listener::bind`].
    pub async fn bind_unwarned(addr: &str) -> Result<Listener, BindError> {
        let err = |source| BindError::Io {
            addr: addr.to_string(),
            source,
        };
        match Endpoint::parse(addr).map_err(BindError::Address)? {
            Endpoint::Tcp(hostport) => {
                let l = TcpListener::bind(&hostport).await.map_err(err)?;
                Ok(Listener::Tcp(l))
            }
            Endpoint::Unix(path) => {
                if std::fs::symlink_metadata(&path).is_ok_and(|m| is_socket(&m)) {
                    let _ = std::fs::remove_file(&path);
                }
                Ok(Listener::Unix(
                    UnixListener::bind(&path).map_err(err)?,
                    path,
                ))
            }
        }
    }

    /// Binds every address, in order; the first failure is returned (and what was bound is
    /// dropped).
    ///
    /// # Errors
    /// As [`Listener::bind`].
    pub async fn bind_all(addrs: &[String]) -> Result<Vec<Listener>, BindError> {
        let mut out = Vec::with_capacity(addrs.len());
        for a in addrs {
            out.push(Listener::bind(a).await?);
        }
        Ok(out)
    }

    /// [`Listener::bind_all`] without the warning (see [`Listener::bind_unwarned`]).
    ///
    /// # Errors
    /// As [`Listener::bind`].
    pub async fn bind_all_unwarned(addrs: &[String]) -> Result<Vec<Listener>, BindError> {
        let mut out = Vec::with_capacity(addrs.len());
        for a in addrs {
            out.push(Listener::bind_unwarned(a).await?);
        }
        Ok(out)
    }

    /// The bound address: `HOST:PORT` with the real port, or `unix:PATH`.
    pub fn local_addr(&self) -> String {
        match self {
            Listener::Tcp(t) => t.local_addr().map(|a| a.to_string()).unwrap_or_default(),
            Listener::Unix(_, p) => format!("unix:{}", p.display()),
        }
    }

    /// The bound TCP address, if TCP.
    pub fn tcp_addr(&self) -> Option<std::net::SocketAddr> {
        match self {
            Listener::Tcp(t) => t.local_addr().ok(),
            Listener::Unix(..) => None,
        }
    }

    /// Accepts one connection and names its peer (`HOST:PORT`, or `unix:PATH` of the
    /// listener for a Unix peer, which has no address of its own).
    ///
    /// # Errors
    /// The OS's accept error (out of descriptors, an aborted handshake): transient.
    pub async fn accept(&self) -> io::Result<(Conn, String)> {
        match self {
            Listener::Tcp(t) => {
                let (s, peer) = t.accept().await?;
                Ok((Conn::Tcp(s), peer.to_string()))
            }
            Listener::Unix(u, p) => {
                let (s, _) = u.accept().await?;
                Ok((Conn::Unix(s), format!("unix:{}", p.display())))
            }
        }
    }
}

/// The warning for a TCP listener other machines can reach; `None` for a loopback one.
/// fogline has no authentication yet (TLS alone does not ask who a client is unless it
/// requires certificates), so such a port is open to anyone on the network: the operator
/// should hear that once, when it is bound.
pub fn exposure(addr: std::net::SocketAddr) -> Option<String> {
    (!addr.ip().is_loopback()).then(|| {
        format!(
            "{addr} accepts connections from other machines: with no authentication, \
             anyone who can reach it may publish, subscribe and manage streams; listen on \
             127.0.0.1 or a Unix socket unless the network is trusted"
        )
    })
}

fn is_socket(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    m.file_type().is_socket()
}

/// How an accept loop treats its connections.
#[derive(Clone, Debug, Default)]
pub struct AcceptOptions {
    /// Most connections served at once (shared by every loop given the same semaphore);
    /// further ones wait in the kernel's backlog.
    pub limit: Option<Arc<Semaphore>>,
    /// TCP keep-alive probe interval, so dead peers are noticed.
    pub keepalive: Option<Duration>,
    /// Serve TLS: each connection's handshake runs in its own task (a client that stalls
    /// holds only its own slot, until the handshake timeout), and `serve` gets
    /// [`Conn::Tls`]. A failed handshake ends only that connection.
    pub tls: Option<Arc<TlsAcceptor>>,
}

impl AcceptOptions {
    /// Every listener with its options: `plain` ones with these, `tls` ones with these and
    /// `acceptor` (one connection limit, when set, shared by both).
    pub fn with_tls(
        self,
        plain: Vec<Listener>,
        tls: Vec<Listener>,
        acceptor: Option<Arc<TlsAcceptor>>,
    ) -> impl Iterator<Item = (Listener, AcceptOptions)> {
        let secure = AcceptOptions {
            tls: acceptor,
            ..self.clone()
        };
        let plain = plain.into_iter().map(move |l| (l, self.clone()));
        plain.chain(tls.into_iter().map(move |l| (l, secure.clone())))
    }
}

/// Accepts on `listener` until `stop` turns true, serving each connection with `serve` in
/// a task of its own; then stops accepting, ends every connection it started (their tasks
/// are dropped) and returns once none is left. TCP connections get `nodelay`. Accept errors
/// (out of descriptors) are logged and retried after a short pause.
///
/// A connection's task is let go of as soon as it ends, not at the next accept: a finished
/// task keeps its whole allocation (the connection's future, a few KiB for MQTT) until it
/// is joined, so thousands of connections that closed with no new one after them held
/// megabytes (`crates/fogline-net/tests/accept_memory.rs`).
pub async fn accept_loop<F, Fut>(
    listener: Listener,
    opts: AcceptOptions,
    mut stop: watch::Receiver<bool>,
    serve: F,
) where
    F: Fn(Conn, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let serve = Arc::new(serve);
    let mut conns = tokio::task::JoinSet::new();
    loop {
        let permit = match &opts.limit {
            Some(limit) => tokio::select! {
                _ = stop.wait_for(|s| *s) => break,
                p = limit.clone().acquire_owned() => match p {
                    Ok(p) => Some(p),
                    Err(_) => break,
                },
            },
            None => None,
        };
        let accepted = loop {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => break None,
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
                a = listener.accept() => break Some(a),
            }
        };
        let Some(accepted) = accepted else { break };
        match accepted {
            Ok((conn, peer)) => {
                if let Conn::Tcp(s) = &conn {
                    let _ = s.set_nodelay(true);
                    if let Some(k) = opts.keepalive {
                        let ka = socket2::TcpKeepalive::new().with_time(k).with_interval(k);
                        let _ = socket2::SockRef::from(s).set_tcp_keepalive(&ka);
                    }
                }
                match &opts.tls {
                    None => {
                        let served = serve(conn, peer);
                        conns.spawn(async move {
                            served.await;
                            drop(permit);
                        });
                    }
                    Some(tls) => {
                        let (tls, serve) = (tls.clone(), serve.clone());
                        conns.spawn(async move {
                            if let Some(conn) = handshake(&tls, conn, &peer).await {
                                serve(conn, peer).await;
                            }
                            drop(permit);
                        });
                    }
                }
            }
            Err(e) => {
                tracing::warn!(addr = %listener.local_addr(), error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    conns.shutdown().await;
}

/// The TLS handshake of an accepted connection; `None` (logged) when it failed.
async fn handshake(tls: &TlsAcceptor, conn: Conn, peer: &str) -> Option<Conn> {
    match tls.accept(conn).await {
        Ok(stream) => {
            let username = if tls.identity_is_username() {
                let cert = stream
                    .get_ref()
                    .1
                    .peer_certificates()
                    .and_then(|c| c.first());
                let cn = cert.and_then(|c| crate::tls::common_name(c));
                if cn.is_none() {
                    // As Mosquitto: the identity is the username, so none is no entry.
                    tracing::debug!(%peer, "client certificate has no CN");
                    return None;
                }
                cn
            } else {
                None
            };
            Some(Conn::Tls(Box::new(TlsConn { stream, username })))
        }
        Err(e) => {
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            None
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Unix(s) => Pin::new(s).poll_read(cx, buf),
            Conn::Tls(t) => Pin::new(&mut t.stream).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Unix(s) => Pin::new(s).poll_write(cx, buf),
            Conn::Tls(t) => Pin::new(&mut t.stream).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Conn::Unix(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Conn::Tls(t) => Pin::new(&mut t.stream).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Tls(t) => t.stream.is_write_vectored(),
            _ => true,
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Tcp(s) => Pin::new(s).poll_flush(cx),
            Conn::Unix(s) => Pin::new(s).poll_flush(cx),
            Conn::Tls(t) => Pin::new(&mut t.stream).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Unix(s) => Pin::new(s).poll_shutdown(cx),
            Conn::Tls(t) => Pin::new(&mut t.stream).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn endpoints_parse() {
        assert_eq!(
            Endpoint::parse("127.0.0.1:7766"),
            Ok(Endpoint::Tcp("127.0.0.1:7766".into()))
        );
        assert_eq!(
            Endpoint::parse("tcp://[::1]:1"),
            Ok(Endpoint::Tcp("[::1]:1".into()))
        );
        assert_eq!(
            Endpoint::parse("unix:/run/fogline.sock"),
            Ok(Endpoint::Unix("/run/fogline.sock".into()))
        );
        for bad in [
            "",
            "localhost",
            "127.0.0.1:",
            ":80",
            "1.2.3.4:99999",
            "unix:",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            Endpoint::parse("unix:/x").unwrap().to_string(),
            "unix:/x".to_string()
        );
    }

    async fn echo(mut c: Conn, _peer: String) {
        let mut buf = [0u8; 4];
        if c.read_exact(&mut buf).await.is_ok() {
            let _ = c.write_all(&buf).await;
        }
        // Hold the connection until the loop ends it.
        let _ = c.read(&mut buf).await;
    }

    #[tokio::test]
    async fn the_loop_serves_tcp_and_unix_and_ends_its_connections() {
        let dir = std::env::temp_dir().join(format!("fogline-net-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("t.sock");
        let tcp = Listener::bind("127.0.0.1:0").await.unwrap();
        let unix = Listener::bind(&format!("unix:{}", sock.display()))
            .await
            .unwrap();
        let tcp_addr = tcp.local_addr();
        let (stop_tx, stop) = watch::channel(false);
        let a = tokio::spawn(accept_loop(
            tcp,
            AcceptOptions::default(),
            stop.clone(),
            echo,
        ));
        let b = tokio::spawn(accept_loop(unix, AcceptOptions::default(), stop, echo));
        let mut t = TcpStream::connect(&tcp_addr).await.unwrap();
        t.write_all(b"ping").await.unwrap();
        let mut got = [0u8; 4];
        t.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"ping");
        let mut u = UnixStream::connect(&sock).await.unwrap();
        u.write_all(b"unix").await.unwrap();
        u.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"unix");
        stop_tx.send_replace(true);
        a.await.unwrap();
        b.await.unwrap();
        // Both connections were closed by the loops.
        assert_eq!(t.read(&mut got).await.unwrap(), 0);
        assert_eq!(u.read(&mut got).await.unwrap(), 0);
        // A stale socket file is replaced on the next bind.
        drop(
            Listener::bind(&format!("unix:{}", sock.display()))
                .await
                .unwrap(),
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn at_most_limit_connections_are_served_at_once() {
        let l = Listener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr();
        let (stop_tx, stop) = watch::channel(false);
        let opts = AcceptOptions {
            limit: Some(Arc::new(Semaphore::new(1))),
            keepalive: Some(Duration::from_secs(5)),
            tls: None,
        };
        let lp = tokio::spawn(accept_loop(l, opts, stop, echo));
        let mut first = TcpStream::connect(&addr).await.unwrap();
        first.write_all(b"one!").await.unwrap();
        let mut got = [0u8; 4];
        first.read_exact(&mut got).await.unwrap();
        let mut second = TcpStream::connect(&addr).await.unwrap();
        second.write_all(b"two!").await.unwrap();
        let waited =
            tokio::time::timeout(Duration::from_millis(200), second.read_exact(&mut got)).await;
        assert!(
            waited.is_err(),
            "the second waits while the first is served"
        );
        drop(first);
        tokio::time::timeout(Duration::from_secs(10), second.read_exact(&mut got))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&got, b"two!");
        stop_tx.send_replace(true);
        lp.await.unwrap();
    }

    #[test]
    fn only_a_non_loopback_listener_is_warned_about() {
        let warned = |a: &str| exposure(a.parse().unwrap()).is_some();
        assert!(!warned("127.0.0.1:1883"));
        assert!(!warned("127.9.9.9:1883"));
        assert!(!warned("[::1]:1883"));
        assert!(warned("0.0.0.0:1883"));
        assert!(warned("[::]:1883"));
        assert!(warned("192.168.1.20:1883"));
        let w = exposure("0.0.0.0:7070".parse().unwrap()).unwrap();
        assert!(w.starts_with("0.0.0.0:7070 accepts connections from other machines"));
    }

    #[tokio::test]
    async fn bad_addresses_and_busy_ports_are_named() {
        let err = Listener::bind("nonsense").await.unwrap_err().to_string();
        assert!(err.contains("HOST:PORT"), "{err}");
        let l = Listener::bind("127.0.0.1:0").await.unwrap();
        let taken = l.local_addr();
        let err = Listener::bind(&taken).await.unwrap_err().to_string();
        assert!(err.contains(&taken), "{err}");
    }
}
