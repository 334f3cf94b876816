//! The writer task: whenever it is free, takes everything queued (control
//! frames, then high-priority records, then bulk ones) and writes it. It
//! never waits to fill a batch. On shutdown it drains the buffers before
//! closing the socket.

use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use crate::error::ClientError;
use crate::shared::Inner;
use crate::transport::WriteHalf;

/// Chunks smaller than this are copied together into one write.
const COALESCE_BELOW: usize = 16 << 10;

/// Writes until the connection fails (returns the error) or shutdown is
/// requested and everything queued is written (returns `Closed`).
pub(crate) async fn run(inner: Arc<Inner>, mut w: WriteHalf) -> ClientError {
    let mut shutdown: watch::Receiver<bool> = inner.shutdown.subscribe();
    let mut scratch = BytesMut::new();
    loop {
        let taken = inner.outbox.lock().take();
        match taken {
            Some(chunks) => {
                inner.space.notify_waiters();
                if let Err(e) = write_chunks(&mut w, &chunks, &mut scratch).await {
                    return ClientError::Io(e);
                }
                let mut outbox = inner.outbox.lock();
                outbox.finish_write();
                outbox.recycle(chunks);
                drop(outbox);
                inner.progress.notify_waiters();
            }
            None if *shutdown.borrow_and_update() => {
                let _ = w.shutdown().await;
                return ClientError::Closed;
            }
            None => {
                tokio::select! {
                    _ = inner.writer_wake.notified() => {}
                    _ = shutdown.changed() => {}
                }
            }
        }
    }
}

/// Writes chunks in order, gathering small ones so that many topics' small
/// frames still cost one system call.
async fn write_chunks(
    w: &mut WriteHalf,
    chunks: &[BytesMut],
    scratch: &mut BytesMut,
) -> std::io::Result<()> {
    if let [only] = chunks {
        return w.write_all(only).await;
    }
    for chunk in chunks {
        if chunk.len() >= COALESCE_BELOW {
            if !scratch.is_empty() {
                w.write_all(scratch).await?;
                scratch.clear();
            }
            w.write_all(chunk).await?;
        } else {
            scratch.extend_from_slice(chunk);
            if scratch.len() >= COALESCE_BELOW {
                w.write_all(scratch).await?;
                scratch.clear();
            }
        }
    }
    if !scratch.is_empty() {
        w.write_all(scratch).await?;
        scratch.clear();
    }
    Ok(())
}
