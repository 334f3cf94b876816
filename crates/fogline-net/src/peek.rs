//! A TCP read half that takes bytes out of the kernel only after they were handled.
//!
//! When a read drains a connection's receive queue and the peer only sends (an MQTT QoS 0
//! publisher), Linux acknowledges the segment inside that read (`tcp_cleanup_rbuf`): it
//! builds the ACK and, over loopback, runs the peer's side of it before the read returns.
//! For a broker that read is on the critical path of a message, ahead of its forward.
//! [`PeekRead`] reads with `MSG_PEEK`, which leaves the queue full so no ACK is due, and
//! discards the peeked bytes (`MSG_TRUNC`, no copy) at the next read, after the caller
//! handled them and wrote its forwards. The ACK is the same, only later; the price is two
//! more system calls per read that empties the queue (the discard, and a peek that finds
//! nothing where a short read would have told tokio so), both after the forwards.
//! Elsewhere than Linux it reads plainly.

use std::io;
#[cfg(target_os = "linux")]
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::tcp::OwnedReadHalf;

/// See the [module docs](self).
pub struct PeekRead {
    inner: OwnedReadHalf,
    /// Bytes handed out by the last peek and still in the kernel's queue.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    held: usize,
}

impl PeekRead {
    pub fn new(inner: OwnedReadHalf) -> PeekRead {
        PeekRead { inner, held: 0 }
    }
}

/// Discards `held` queued bytes of a TCP socket without copying them.
#[cfg(target_os = "linux")]
fn discard(fd: RawFd, held: &mut usize) -> io::Result<()> {
    while *held > 0 {
        // SAFETY: with MSG_TRUNC a TCP socket discards up to `held` queued bytes and never
        // writes to the (null) buffer (tcp(7)).
        let n = unsafe {
            libc::recv(
                fd,
                std::ptr::null_mut(),
                *held,
                libc::MSG_TRUNC | libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            // The peeked bytes are queued: only a reset could take them away.
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        *held -= n as usize;
    }
    Ok(())
}

impl AsyncRead for PeekRead {
    #[cfg(target_os = "linux")]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // A peek returns the queue's head again: what the caller has must go first.
        // Unlike a short read, a short peek cannot clear tokio's read readiness: by the time
        // the bytes are dropped, the driver may have seen more arrive (a test below), so the
        // next peek's EAGAIN (after the forwards) is what clears it.
        let fd = this.inner.as_ref().as_raw_fd();
        discard(fd, &mut this.held)?;
        this.held = ready!(this.inner.poll_peek(cx, buf))?;
        Poll::Ready(Ok(()))
    }

    #[cfg(not(target_os = "linux"))]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    async fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (b, _) = l.accept().await.unwrap();
        (a, b)
    }

    /// A connected pair: the plain writing end, and the other end's `PeekRead` and write half.
    async fn peek_pair() -> (TcpStream, PeekRead, tokio::net::tcp::OwnedWriteHalf) {
        let (a, b) = pair().await;
        let (rd, wr) = b.into_split();
        (a, PeekRead::new(rd), wr)
    }

    /// Sends 200 kB in uneven pieces, pausing now and then so the reader drains the queue
    /// and must be woken again, and reads it back through small buffers.
    async fn every_byte_once_in_order() {
        let (mut a, mut rd, _wr) = peek_pair().await;
        let sent: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let writer = {
            let sent = sent.clone();
            tokio::spawn(async move {
                for (i, chunk) in sent.chunks(7_919).enumerate() {
                    a.write_all(chunk).await.unwrap();
                    if i % 3 == 0 {
                        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                    }
                }
            })
        };
        let mut got = Vec::new();
        let mut small = [0u8; 1_000];
        let read_all = async {
            while got.len() < sent.len() {
                let n = rd.read(&mut small).await.unwrap();
                assert!(n > 0);
                got.extend_from_slice(&small[..n]);
            }
        };
        // A lost wake-up would hang here.
        tokio::time::timeout(std::time::Duration::from_secs(20), read_all)
            .await
            .expect("the reader was not woken for bytes that arrived");
        writer.await.unwrap();
        assert_eq!(got, sent);
    }

    #[tokio::test]
    async fn reads_every_byte_once_in_order() {
        every_byte_once_in_order().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_every_byte_once_in_order_on_two_threads() {
        every_byte_once_in_order().await;
    }

    /// Request and answer in lockstep, the answer written before the next read: the next
    /// request may arrive, and be seen by the I/O driver on another thread, before the
    /// handled bytes are dropped. Its wake-up must not be lost.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_request_that_arrives_before_the_drop_is_not_missed() {
        let (mut client, mut rd, mut wr) = peek_pair().await;
        let server = tokio::spawn(async move {
            let mut one = [0u8; 64];
            loop {
                let n = rd.read(&mut one).await.unwrap();
                if n == 0 {
                    return;
                }
                wr.write_all(&one[..n]).await.unwrap();
                // A handler that takes a while after its answer: time for the next request
                // to arrive and for the driver to see it.
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        });
        let rounds = async {
            let mut back = [0u8; 1];
            for i in 0..5_000u32 {
                client.write_all(&[i as u8]).await.unwrap();
                client.read_exact(&mut back).await.unwrap();
                assert_eq!(back[0], i as u8);
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), rounds)
            .await
            .expect("a request's wake-up was lost");
        drop(client);
        server.await.unwrap();
    }

    #[tokio::test]
    async fn end_of_stream_after_the_last_bytes() {
        let (mut a, mut rd, _wr) = peek_pair().await;
        a.write_all(b"last words").await.unwrap();
        drop(a);
        let mut got = Vec::new();
        rd.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"last words");
        // Nothing is left in the kernel's queue either.
        assert_eq!(rd.read(&mut [0u8; 8]).await.unwrap(), 0);
    }

    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn handed_out_bytes_stay_queued_until_the_next_read() {
        let (mut a, mut rd, _wr) = peek_pair().await;
        a.write_all(b"hello").await.unwrap();
        let mut five = [0u8; 5];
        rd.read_exact(&mut five).await.unwrap();
        assert_eq!(&five, b"hello");
        // Still queued: a peek of the socket sees them (the ACK is not yet due).
        let mut peeked = [0u8; 5];
        assert_eq!(rd.inner.peek(&mut peeked).await.unwrap(), 5);
        assert_eq!(&peeked, b"hello");
        a.write_all(b" world").await.unwrap();
        let mut six = [0u8; 6];
        rd.read_exact(&mut six).await.unwrap();
        assert_eq!(&six, b" world");
    }
}
