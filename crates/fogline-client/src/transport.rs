//! Addresses and the byte stream under a connection.
//!
//! Address forms: `host:port`, `tcp://host:port`, `unix:/path/to.sock`
//! (also `unix:///path`). TCP sockets get `TCP_NODELAY`: the client batches
//! by itself and must not add Nagle's delay at low rates.

use std::io;
use std::sync::Arc;

use bytes::BytesMut;
pub(crate) use fogline_net::{SharedWrite, WriteHalf};
use tokio::net::TcpStream;

use crate::error::ClientError;

/// Read half of a connection. Reading needs only `&self`: the reader task and a
/// `Subscription::recv` that reads for itself share it (see `reader::Incoming`), each
/// waiting for readiness and reading without blocking.
pub(crate) enum ReadHalf {
    Tcp(tokio::net::tcp::OwnedReadHalf),
    #[cfg(unix)]
    Unix(tokio::net::unix::OwnedReadHalf),
}

impl ReadHalf {
    /// Waits until a read may make progress (any number of tasks may wait at once).
    pub(crate) async fn readable(&self) -> io::Result<()> {
        match self {
            ReadHalf::Tcp(r) => r.readable().await,
            #[cfg(unix)]
            ReadHalf::Unix(r) => r.readable().await,
        }
    }

    /// Reads what is there into `buf`; `WouldBlock` when nothing is.
    pub(crate) fn try_read_buf(&self, buf: &mut BytesMut) -> io::Result<usize> {
        match self {
            ReadHalf::Tcp(r) => r.try_read_buf(buf),
            #[cfg(unix)]
            ReadHalf::Unix(r) => r.try_read_buf(buf),
        }
    }

    /// Waits for and reads at least one byte; 0 at the end of the stream.
    pub(crate) async fn read_buf(&self, buf: &mut BytesMut) -> io::Result<usize> {
        loop {
            self.readable().await?;
            match self.try_read_buf(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                done => return done,
            }
        }
    }
}

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
                Ok((ReadHalf::Tcp(r), Arc::new(WriteHalf::from(w))))
            }
            #[cfg(unix)]
            Addr::Unix(path) => {
                let stream = tokio::net::UnixStream::connect(path).await?;
                let (r, w) = stream.into_split();
                Ok((ReadHalf::Unix(r), Arc::new(WriteHalf::from(w))))
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
