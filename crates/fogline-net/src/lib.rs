//! A stream socket's write half shared by its writer task and by callers that write without
//! waiting: on the server, a publisher's task writing a delivery to an idle subscriber's
//! socket; in the client, `publish` writing a record while the connection's writer task is
//! idle. The writer task writes through [`SharedWrite`] (an `AsyncWrite`); direct writers
//! call [`WriteHalf::try_write`] on the same `Arc`. Who may write when is the user's protocol
//! (fogline keeps it under a lock with an idle flag); this crate only shares the socket.
//! [`yield_to_woken`] is the scheduling step both sides take around direct writes.
//! [`ReadHalf`] is the read side's counterpart: every method takes `&self`, so a reader task
//! and a caller waiting for its own data (the client's `Subscription::recv`) can share it.
//! [`PeekRead`] is a read half that moves the kernel's ACK after the caller's forwards;
//! [`StallLimit`] a write half that gives up on a peer that takes no bytes for too long.
//! [`transport`] is the layer every listener of a node accepts through, [`tls`] its TLS.

pub mod intake;
mod peek;
mod stall;
pub mod tls;
pub mod transport;

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::io::AsyncWrite;
use tokio::net::tcp;
#[cfg(unix)]
use tokio::net::unix;

pub use peek::PeekRead;
pub use stall::StallLimit;

/// The read half of a TCP or Unix stream. Every method takes `&self`, so several tasks may
/// wait for readiness at once; who reads when is the caller's protocol, as for [`WriteHalf`].
pub enum ReadHalf {
    Tcp(tcp::OwnedReadHalf),
    #[cfg(unix)]
    Unix(unix::OwnedReadHalf),
}

impl From<tcp::OwnedReadHalf> for ReadHalf {
    fn from(r: tcp::OwnedReadHalf) -> Self {
        ReadHalf::Tcp(r)
    }
}

#[cfg(unix)]
impl From<unix::OwnedReadHalf> for ReadHalf {
    fn from(r: unix::OwnedReadHalf) -> Self {
        ReadHalf::Unix(r)
    }
}

impl ReadHalf {
    /// Waits until a read may make progress (any number of tasks may wait at once).
    pub async fn readable(&self) -> io::Result<()> {
        match self {
            ReadHalf::Tcp(r) => r.readable().await,
            #[cfg(unix)]
            ReadHalf::Unix(r) => r.readable().await,
        }
    }

    /// Reads what is there into `buf`; `WouldBlock` when nothing is.
    pub fn try_read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        match self {
            ReadHalf::Tcp(r) => r.try_read_buf(buf),
            #[cfg(unix)]
            ReadHalf::Unix(r) => r.try_read_buf(buf),
        }
    }

    /// Waits for and reads at least one byte; 0 at the end of the stream.
    pub async fn read_buf<B: bytes::BufMut>(&self, buf: &mut B) -> io::Result<usize> {
        loop {
            self.readable().await?;
            match self.try_read_buf(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                done => return done,
            }
        }
    }
}

/// The write half of a TCP or Unix stream.
pub enum WriteHalf {
    Tcp(tcp::OwnedWriteHalf),
    #[cfg(unix)]
    Unix(unix::OwnedWriteHalf),
}

impl From<tcp::OwnedWriteHalf> for WriteHalf {
    fn from(w: tcp::OwnedWriteHalf) -> Self {
        WriteHalf::Tcp(w)
    }
}

#[cfg(unix)]
impl From<unix::OwnedWriteHalf> for WriteHalf {
    fn from(w: unix::OwnedWriteHalf) -> Self {
        WriteHalf::Unix(w)
    }
}

impl WriteHalf {
    /// Writes what the socket takes now; `WouldBlock` when it takes nothing.
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            WriteHalf::Tcp(w) => w.try_write(buf),
            #[cfg(unix)]
            WriteHalf::Unix(w) => w.try_write(buf),
        }
    }

    /// As [`WriteHalf::try_write`], gathering `bufs` in one system call.
    pub fn try_write_vectored(&self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            WriteHalf::Tcp(w) => w.try_write_vectored(bufs),
            #[cfg(unix)]
            WriteHalf::Unix(w) => w.try_write_vectored(bufs),
        }
    }

    fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            WriteHalf::Tcp(w) => w.as_ref().poll_write_ready(cx),
            #[cfg(unix)]
            WriteHalf::Unix(w) => w.as_ref().poll_write_ready(cx),
        }
    }

    /// Shuts the write direction down (the peer reads end of stream). An already
    /// disconnected socket is not an error.
    pub fn shutdown(&self) -> io::Result<()> {
        let sock = match self {
            WriteHalf::Tcp(w) => socket2::SockRef::from(w.as_ref()),
            #[cfg(unix)]
            WriteHalf::Unix(w) => socket2::SockRef::from(w.as_ref()),
        };
        match sock.shutdown(std::net::Shutdown::Write) {
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
            r => r,
        }
    }

    /// Waits for writability and runs `write` until it does not report `WouldBlock`.
    fn poll_with(
        &self,
        cx: &mut Context<'_>,
        write: impl Fn(&Self) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.poll_write_ready(cx))?;
            match write(self) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => return Poll::Ready(r),
            }
        }
    }
}

/// The writer task's view of a shared write half.
pub struct SharedWrite(pub Arc<WriteHalf>);

impl AsyncWrite for SharedWrite {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.0.poll_with(cx, |w| w.try_write(buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.0.poll_with(cx, |w| w.try_write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.0.shutdown())
    }
}

/// Lets the tasks already woken run, then resumes: the task wakes itself, so the scheduler
/// queues it behind them. (`tokio::task::yield_now` would also poll the I/O driver first,
/// one more system call.)
pub async fn yield_to_woken() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            Poll::Ready(())
        } else {
            yielded = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await;
}
