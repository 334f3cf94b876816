//! Direct handoff: a publisher's task writes a delivery to an idle subscriber's socket
//! itself, as Mosquitto does inside its publish handler, instead of queueing it and waking
//! the subscriber's writer (a wake-up and a task switch later, and on a one-thread server
//! only after the publisher's task has gone back to its own socket).
//!
//! The broker offers a batch to a subscription's [`DirectSink`] only when the publisher
//! asked for it ([`Handoff::Direct`]) and nothing is queued for that subscription. The
//! front end decides the rest: it declines while its writer holds anything unwritten.
//! [`SharedWrite`] lets the writer task and the sinks share one TCP socket.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::io::AsyncWrite;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;

use crate::batch::Batch;

/// How a publish reaches subscribers whose writers are idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handoff {
    /// A subscription with a [`DirectSink`] and an empty queue is offered the batch first,
    /// so an idle writer's socket gets it on the publisher's task, without a task switch.
    Direct,
    /// Queue for the subscribers' writers. For a publisher with more already buffered: the
    /// writers then send the burst in few writes instead of one per message.
    Queue,
}

/// A subscriber's writer that the publisher's task may write to itself while the writer
/// has nothing in hand.
pub trait DirectSink: Send + Sync {
    /// Called on the publisher's task when the subscription's queue is empty and open.
    /// True: the batch is delivered (any unwritten rest is the sink's to finish); false: the
    /// broker queues it as usual. A sink must decline while its writer holds anything
    /// unwritten, so a batch never overtakes one queued before it.
    fn try_deliver(&self, batch: &Batch) -> bool;
}

/// A TCP socket's write half shared by its writer task (through this `AsyncWrite`) and
/// direct sinks (through [`OwnedWriteHalf::try_write`] on the same `Arc`). The front end
/// keeps them from writing at the same time.
pub struct SharedWrite(pub Arc<OwnedWriteHalf>);

impl SharedWrite {
    fn stream(&self) -> &TcpStream {
        (*self.0).as_ref()
    }
}

impl SharedWrite {
    /// Waits for writability and runs `write` until it does not report `WouldBlock`.
    fn poll_with(
        &self,
        cx: &mut Context<'_>,
        write: impl Fn(&TcpStream) -> io::Result<usize>,
    ) -> Poll<io::Result<usize>> {
        let s = self.stream();
        loop {
            ready!(s.poll_write_ready(cx))?;
            match write(s) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => return Poll::Ready(r),
            }
        }
    }
}

impl AsyncWrite for SharedWrite {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_with(cx, |s| s.try_write(buf))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_with(cx, |s| s.try_write_vectored(bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        let sock = socket2::SockRef::from(self.stream());
        Poll::Ready(match sock.shutdown(std::net::Shutdown::Write) {
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
            r => r,
        })
    }
}
