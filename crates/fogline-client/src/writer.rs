//! The writer task: whenever it is free, takes everything queued (control
//! frames, then high-priority records, then bulk ones) and writes it. It
//! never waits to fill a batch. With nothing to write it lends the socket to
//! publishers before it waits (see `outbox`), but after a write only once
//! the tasks woken meanwhile have run, so a burst keeps batching. On shutdown it drains the
//! buffers before closing the socket.

use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use crate::error::ClientError;
use crate::shared::Inner;
use crate::transport::{SharedWrite, WriteHalf};

/// Chunks smaller than this are copied together into one write.
const COALESCE_BELOW: usize = 16 << 10;

/// Writes until the connection fails (returns the error) or shutdown is
/// requested and everything queued is written (returns `Closed`).
pub(crate) async fn run(inner: Arc<Inner>, socket: Arc<WriteHalf>) -> ClientError {
    let _unlend = Unlend {
        inner: inner.clone(),
        socket: socket.clone(),
    };
    let mut shutdown: watch::Receiver<bool> = inner.shutdown.subscribe();
    let mut w = SharedWrite(socket.clone());
    let mut scratch = BytesMut::new();
    loop {
        let taken = {
            let mut outbox = inner.outbox.lock();
            outbox.take_back();
            let taken = outbox.take();
            if taken.is_none() && !*shutdown.borrow() {
                outbox.lend(socket.clone());
            }
            taken
        };
        match taken {
            Some(chunks) => {
                inner.space.notify_waiters();
                if let Err(e) = write_chunks(&mut w, &chunks, &mut scratch).await {
                    return ClientError::Io(e);
                }
                {
                    let mut outbox = inner.outbox.lock();
                    outbox.finish_write();
                    outbox.recycle(chunks);
                }
                inner.progress.notify_waiters();
                // Before it lends the socket, let a publisher that is still busy (a burst)
                // queue more: writing each burst's first record directly would cost a
                // system call per burst. A publisher that ran out of its coop budget is
                // deferred until the runtime has polled its driver: `yield_now` waits for
                // that too, and the self-wake after it queues this task behind what the
                // deferred wake-ups scheduled (tokio wakes deferred tasks last-in first).
                tokio::task::yield_now().await;
                fogline_net::yield_to_woken().await;
            }
            None if *shutdown.borrow_and_update() => {
                let late = {
                    let mut outbox = inner.outbox.lock();
                    outbox.take_back();
                    !outbox.is_empty()
                };
                if late {
                    continue; // a publish wrote only part of itself meanwhile
                }
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

/// Takes the socket back from publishers when the writer ends, also when it is aborted
/// (a lost connection): nothing may be written to this socket after its writer is gone.
struct Unlend {
    inner: Arc<Inner>,
    socket: Arc<WriteHalf>,
}

impl Drop for Unlend {
    fn drop(&mut self) {
        self.inner.outbox.lock().take_back_if(&self.socket);
    }
}

/// Writes chunks in order, gathering small ones so that many topics' small
/// frames still cost one system call.
async fn write_chunks(
    w: &mut SharedWrite,
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
