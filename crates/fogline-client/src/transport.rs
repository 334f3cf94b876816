//! Addresses and the byte stream under a connection.
//!
//! Address forms: `host:port`, `tcp://host:port`, `unix:/path/to.sock`
//! (also `unix:///path`). TCP sockets get `TCP_NODELAY`: the client batches
//! by itself and must not add Nagle's delay at low rates.

use std::sync::Arc;

/// Both halves are shared: the reader task and a `Subscription::recv` read the same
/// [`ReadHalf`] (see `reader`); the writer task and a publisher write the same [`WriteHalf`]
/// (see `outbox`).
pub(crate) use fogline_net::{ReadHalf, SharedWrite, WriteHalf};
use tokio::net::TcpStream;

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

    /// The write half is shared: the writer task writes through [`SharedWrite`], and a
    /// publish may write to it directly while the writer is idle (see `outbox`).
    pub(crate) async fn connect(&self) -> std::io::Result<(ReadHalf, Arc<WriteHalf>)> {
        match self {
            Addr::Tcp(hostport) => {
                let stream = TcpStream::connect(hostport.as_str()).await?;
                stream.set_nodelay(true)?;
                let (r, w) = stream.into_split();
                Ok((ReadHalf::from(r), Arc::new(WriteHalf::from(w))))
            }
            #[cfg(unix)]
            Addr::Unix(path) => {
                let stream = tokio::net::UnixStream::connect(path).await?;
                let (r, w) = stream.into_split();
                Ok((ReadHalf::from(r), Arc::new(WriteHalf::from(w))))
            }
            #[cfg(not(unix))]
            Addr::Unix(_) => Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "unix sockets are not available on this platform",
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
}
