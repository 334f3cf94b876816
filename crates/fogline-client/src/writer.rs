//! The writer task: whenever it is free, takes everything queued (control
//! frames, then high-priority records, then bulk ones) and writes it. It never waits to fill
//! a batch. On shutdown it drains the buffers before closing the socket.

use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use crate::error::ClientError;
use crate::shared::Inner;
use crate::transport::WriteHalf;

/// Writes until the connection fails (returns the error) or shutdown is
/// requested and everything queued is written (returns `Closed`).
pub(crate) async fn run(inner: Arc<Inner>, mut w: WriteHalf) -> ClientError {
    let mut shutdown: watch::Receiver<bool> = inner.shutdown.subscribe();
    loop {
        let taken = inner.outbox.lock().take();
        match taken {
            Some(taken) => {
                inner.space.notify_waiters();
                for chunk in taken {
                    if !chunk.is_empty() {
                        if let Err(e) = w.write_all(&chunk).await {
                            return ClientError::Io(e);
                        }
                    }
                }
                inner.outbox.lock().finish_write();
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
