//! A connection's outgoing bytes: small frames are encoded into one buffer; large record
//! blocks are queued as the `Bytes` they already are and go to the socket with vectored
//! writes, so a 1 MiB record is not copied into the write buffer first.

use std::io::IoSlice;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// Blocks at least this large are sent from where they are instead of copied.
pub const SHARE_MIN: usize = 32 * 1024;
/// Most slices per `writev`.
const MAX_SLICES: usize = 64;

/// Encoded frames waiting for the socket, in order.
#[derive(Default)]
pub struct OutBuf {
    /// The tail being encoded into.
    pub buf: BytesMut,
    /// Everything before `buf`, in order.
    chunks: Vec<Bytes>,
}

impl OutBuf {
    /// An empty queue whose encoding buffer holds `cap` bytes before it grows.
    pub fn with_capacity(cap: usize) -> OutBuf {
        OutBuf {
            buf: BytesMut::with_capacity(cap),
            chunks: Vec::new(),
        }
    }

    /// Queues `block` after what is encoded so far, without copying it.
    pub fn push_shared(&mut self, block: Bytes) {
        if !self.buf.is_empty() {
            self.chunks.push(self.buf.split().freeze());
        }
        self.chunks.push(block);
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty() && self.chunks.is_empty()
    }

    /// Writes everything, in order, and empties the queue (the encoding buffer keeps its
    /// capacity).
    ///
    /// # Errors
    /// The socket's error; what was not written is dropped with the connection.
    pub async fn write_to<W: AsyncWrite + Unpin>(&mut self, wr: &mut W) -> std::io::Result<()> {
        if self.chunks.is_empty() {
            wr.write_all(&self.buf).await?;
            self.buf.clear();
            return Ok(());
        }
        if !self.buf.is_empty() {
            self.chunks.push(self.buf.split().freeze());
        }
        let mut first = 0;
        loop {
            while first < self.chunks.len() && self.chunks[first].is_empty() {
                first += 1;
            }
            if first == self.chunks.len() {
                break;
            }
            let slices: Vec<IoSlice<'_>> = self.chunks[first..]
                .iter()
                .take(MAX_SLICES)
                .map(|c| IoSlice::new(c))
                .collect();
            let mut n = wr.write_vectored(&slices).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            while n > 0 {
                let c = &mut self.chunks[first];
                let step = n.min(c.len());
                c.advance(step);
                n -= step;
                if c.is_empty() {
                    first += 1;
                }
            }
        }
        self.chunks.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// Accepts at most `step` bytes per call, so every partial-write path runs.
    struct Trickle {
        got: Vec<u8>,
        step: usize,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            b: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            let n = b.len().min(self.step);
            self.got.extend_from_slice(&b[..n]);
            Poll::Ready(Ok(n))
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<std::io::Result<usize>> {
            let mut left = self.step;
            let mut n = 0;
            for b in bufs {
                let k = b.len().min(left);
                self.got.extend_from_slice(&b[..k]);
                left -= k;
                n += k;
                if left == 0 {
                    break;
                }
            }
            Poll::Ready(Ok(n))
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn frames_and_shared_blocks_arrive_in_order_through_partial_writes() {
        for step in [1, 3, 7, 100, 1 << 20] {
            let mut out = OutBuf::with_capacity(16);
            let mut want = Vec::new();
            for i in 0..200u32 {
                let head = i.to_le_bytes();
                out.buf.extend_from_slice(&head);
                want.extend_from_slice(&head);
                if i % 3 == 0 {
                    let block = Bytes::from(vec![i as u8; (i as usize * 7) % 50]);
                    want.extend_from_slice(&block);
                    out.push_shared(block);
                }
            }
            let mut w = Trickle {
                got: Vec::new(),
                step,
            };
            out.write_to(&mut w).await.unwrap();
            assert_eq!(w.got, want, "step {step}");
            assert!(out.is_empty());
            out.buf.extend_from_slice(b"again");
            out.write_to(&mut w).await.unwrap();
            assert!(w.got.ends_with(b"again"));
        }
    }
}
