//! A write half that fails when the peer takes no bytes for too long.
//!
//! A client that stops reading (or vanished without a reset) leaves a write pending for
//! as long as TCP keeps probing its zero window: without a limit its writer, subscriptions
//! and connection slot would stay forever. The limit is on progress, not on a whole
//! write, so a slow link that keeps taking bytes is never cut off (NATS's write deadline
//! is the same idea).

use std::future::Future;
use std::io::IoSlice;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// `W`, whose writes fail with `TimedOut` once one has been pending for `limit`.
pub struct StallLimit<W> {
    inner: W,
    limit: Duration,
    /// Armed while a write is pending; dropped when it makes progress.
    timer: Option<Pin<Box<Sleep>>>,
}

impl<W> StallLimit<W> {
    /// Wraps `inner`; a write pending for `limit` without progress fails with `TimedOut`.
    pub fn new(inner: W, limit: Duration) -> Self {
        StallLimit {
            inner,
            limit,
            timer: None,
        }
    }

    /// After a pending poll: fails once the write has waited for `limit`.
    fn check(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let limit = self.limit;
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.timer = None;
                Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("the peer took no data for {limit:?}"),
                )))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn settle<T>(
        &mut self,
        cx: &mut Context<'_>,
        res: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        match res {
            Poll::Ready(r) => {
                self.timer = None;
                Poll::Ready(r)
            }
            Poll::Pending => match self.check(cx) {
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                _ => Poll::Pending,
            },
        }
    }
}

/// Reads pass through untouched (the limit is on writes), so a whole socket can be wrapped.
impl<W: AsyncRead + Unpin> AsyncRead for StallLimit<W> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for StallLimit<W> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let res = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.settle(cx, res)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let res = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.settle(cx, res)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let res = Pin::new(&mut this.inner).poll_flush(cx);
        this.settle(cx, res)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let res = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.settle(cx, res)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_reads_nothing_fails_the_write_after_the_limit() {
        let (a, _b) = tokio::io::duplex(16);
        let mut w = StallLimit::new(a, Duration::from_secs(5));
        let started = Instant::now();
        let err = w.write_all(&[7u8; 64]).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_that_keeps_taking_bytes_is_not_cut_off() {
        use tokio::io::AsyncReadExt;
        let (a, mut b) = tokio::io::duplex(16);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut chunk = [0u8; 16];
            loop {
                // Each read comes 4 s after the last: under the 5 s limit every time.
                tokio::time::sleep(Duration::from_secs(4)).await;
                match b.read(&mut chunk).await.unwrap() {
                    0 => return got,
                    n => got.extend_from_slice(&chunk[..n]),
                }
            }
        });
        let mut w = StallLimit::new(a, Duration::from_secs(5));
        let data: Vec<u8> = (0..128u8).collect();
        w.write_all(&data).await.unwrap();
        w.shutdown().await.unwrap();
        drop(w);
        assert_eq!(reader.await.unwrap(), data);
    }
}
