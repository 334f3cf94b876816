//! Addresses and the byte stream under a connection.
//!
//! Address forms: `host:port`, `tcp://host:port`, `unix:/path/to.sock`
//! (also `unix:///path`). TCP sockets get `TCP_NODELAY`: the client batches
//! by itself and must not add Nagle's delay at low rates. TLS runs over either.

use std::io;
use std::sync::Arc;

use fogline_net::tls::TlsConnector;
/// Both halves are shared: the reader task and a `Subscription::recv` read the same
/// [`ReadHalf`] (see `reader`); the writer task and a publisher write the same [`WriteHalf`]
/// (see `outbox`).
pub(crate) use fogline_net::{ReadHalf, SharedWrite, WriteHalf};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use crate::error::ClientError;

/// A parsed server address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Addr {
    Tcp(String),
    Unix(String),
}

impl Addr {
    pub(crate) fn parse(addr: &str) -> Result<Addr, ClientError> {
        let bad = || ClientError::InvalidAddress(addr.to_string());
        if let Some(path) = addr.strip_prefix("unix:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(bad());
            }
            return Ok(Addr::Unix(path.to_string()));
        }
        let hostport = addr.strip_prefix("tcp://").unwrap_or(addr);
        match hostport.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                Ok(Addr::Tcp(hostport.to_string()))
            }
            _ => Err(bad()),
        }
    }

    /// The host part of a TCP address, the default TLS server name (`[::1]` gives `::1`).
    pub(crate) fn host(&self) -> Option<&str> {
        match self {
            Addr::Tcp(hostport) => {
                let host = hostport.rsplit_once(':').map_or(hostport.as_str(), |h| h.0);
                Some(host.trim_start_matches('[').trim_end_matches(']'))
            }
            Addr::Unix(_) => None,
        }
    }

    /// Connects, with the TLS handshake when `tls` is given.
    pub(crate) async fn connect(&self, tls: Option<&TlsConnector>) -> io::Result<Stream> {
        match self {
            Addr::Tcp(hostport) => {
                let stream = TcpStream::connect(hostport.as_str()).await?;
                stream.set_nodelay(true)?;
                match tls {
                    Some(tls) => Ok(Stream::Tls(Box::new(tls.connect(stream).await?))),
                    None => Ok(Stream::Tcp(stream)),
                }
            }
            #[cfg(unix)]
            Addr::Unix(path) => {
                let stream = tokio::net::UnixStream::connect(path).await?;
                match tls {
                    Some(tls) => Ok(Stream::Tls(Box::new(tls.connect(stream).await?))),
                    None => Ok(Stream::Unix(stream)),
                }
            }
            #[cfg(not(unix))]
            Addr::Unix(_) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "unix sockets are not available on this platform",
            )),
        }
    }
}

/// A TLS session over TCP or a Unix socket.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// The connection tasks' halves, and the TLS task when there is one.
pub(crate) type Halves = (ReadHalf, Arc<WriteHalf>, Option<JoinHandle<()>>);

/// A connected stream, before it is split for the connection's tasks.
pub(crate) enum Stream {
    Tcp(TcpStream),
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
    Tls(Box<dyn Io>),
}

impl Stream {
    /// The whole stream, for the handshake's Hello and HelloOk.
    pub(crate) fn io(&mut self) -> &mut dyn Io {
        match self {
            Stream::Tcp(s) => s,
            #[cfg(unix)]
            Stream::Unix(s) => s,
            Stream::Tls(s) => s,
        }
    }

    /// The halves the connection's tasks share. The write half is shared: the writer task
    /// writes through [`SharedWrite`], and a publish may write to it directly while the
    /// writer is idle (see `outbox`). A TLS session cannot be shared that way (its reads
    /// and writes go through one session state, not a socket's readiness), so it runs in a
    /// task of its own behind a socket pair, whose other end gets the plain-socket
    /// treatment: two more copies of each byte, against a second design of every direct
    /// path.
    pub(crate) fn into_halves(self) -> io::Result<Halves> {
        match self {
            Stream::Tcp(s) => {
                let (r, w) = s.into_split();
                Ok((ReadHalf::from(r), Arc::new(WriteHalf::from(w)), None))
            }
            #[cfg(unix)]
            Stream::Unix(s) => {
                let (r, w) = s.into_split();
                Ok((ReadHalf::from(r), Arc::new(WriteHalf::from(w)), None))
            }
            #[cfg(unix)]
            Stream::Tls(tls) => {
                let (near, far) = tokio::net::UnixStream::pair()?;
                let pump = tokio::spawn(crate::pump::run(tls, far));
                let (r, w) = near.into_split();
                Ok((ReadHalf::from(r), Arc::new(WriteHalf::from(w)), Some(pump)))
            }
            #[cfg(not(unix))]
            Stream::Tls(_) => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "TLS needs Unix socket pairs, which this platform lacks",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_forms() {
        assert_eq!(
            Addr::parse("127.0.0.1:7411").unwrap(),
            Addr::Tcp("127.0.0.1:7411".into())
        );
        assert_eq!(
            Addr::parse("tcp://localhost:1").unwrap(),
            Addr::Tcp("localhost:1".into())
        );
        assert_eq!(
            Addr::parse("[::1]:80").unwrap(),
            Addr::Tcp("[::1]:80".into())
        );
        assert_eq!(
            Addr::parse("unix:/run/f.sock").unwrap(),
            Addr::Unix("/run/f.sock".into())
        );
        assert_eq!(
            Addr::parse("unix:///run/f.sock").unwrap(),
            Addr::Unix("/run/f.sock".into())
        );
        for bad in ["", "host", "host:", ":80", "host:99999", "unix:", "tcp://x"] {
            assert!(Addr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_host_is_the_default_server_name() {
        let host = |a: &str| Addr::parse(a).unwrap().host().map(str::to_string);
        assert_eq!(host("127.0.0.1:7411").as_deref(), Some("127.0.0.1"));
        assert_eq!(
            host("tcp://node-3.site:7411").as_deref(),
            Some("node-3.site")
        );
        assert_eq!(host("[::1]:80").as_deref(), Some("::1"));
        assert_eq!(host("unix:/run/f.sock"), None);
    }
}
