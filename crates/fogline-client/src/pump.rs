//! The task that runs a TLS session between the server and the client's end of a socket
//! pair (see `transport::Stream::into_halves` for why). It forwards both ways, each write
//! flushed so a record is not held back in the session, and keeps the back-pressure: while
//! the client does not read, the pair's buffer fills, the task stops reading the server,
//! and TCP tells the server.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::UnixStream;

use crate::transport::Io;

/// Forwarding buffer per direction.
const CHUNK: usize = 64 << 10;
/// After the client closed its side, how long the server's last bytes (its answer to the
/// close) are still forwarded. A client that dropped its socket altogether looks the same
/// here, so a silent server must not keep the task forever.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Runs until either side is done; dropping the session closes the server connection.
pub(crate) async fn run(tls: Box<dyn Io>, local: UnixStream) {
    let (tls_r, tls_w) = tokio::io::split(tls);
    let (local_r, local_w) = local.into_split();
    let up = forward(local_r, tls_w);
    let down = forward(tls_r, local_w);
    tokio::pin!(up, down);
    tokio::select! {
        r = &mut down => {
            if let Err(e) = r {
                tracing::debug!("TLS connection ended: {e}");
            }
        }
        r = &mut up => match r {
            Ok(()) => {
                let _ = tokio::time::timeout(CLOSE_GRACE, down).await;
            }
            Err(e) => tracing::debug!("TLS connection ended: {e}"),
        },
    }
}

/// Copies `r` to `w` until `r` ends, then shuts `w` down.
async fn forward<R, W>(mut r: R, mut w: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            return w.shutdown().await;
        }
        w.write_all(&buf[..n]).await?;
        w.flush().await?;
    }
}
