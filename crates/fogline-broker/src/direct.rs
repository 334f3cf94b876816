//! Direct handoff: a publisher's task writes a delivery to an idle subscriber's socket
//! itself, as Mosquitto does inside its publish handler, instead of queueing it and waking
//! the subscriber's writer (a wake-up and a task switch later, and on a one-thread server
//! only after the publisher's task has gone back to its own socket).
//!
//! The broker offers a batch to a subscription's [`DirectSink`] only when the publisher
//! asked for it ([`Handoff::Direct`]) and nothing is queued for that subscription. The
//! front end decides the rest: it declines while its writer holds anything unwritten.
//! [`SharedWrite`] (from `fogline-net`) lets the writer task and the sinks share one socket, and
//! [`DirectSocket`] is the state both keep, under the front end's own lock, to take turns.

use std::io;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
pub use fogline_net::{PeekRead, SharedWrite, WriteHalf};

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

    /// Called on the publisher's task for every acknowledged batch routed to the
    /// subscription, before it is offered and before the acknowledgement: a front end
    /// that keeps its own durable copy of what it was routed (an MQTT durable session's
    /// journal) writes it now, so the acknowledgement covers it even while the batch waits
    /// in the queue. The default keeps nothing.
    ///
    /// # Errors
    /// The copy was not written: an acknowledged batch is then refused (after live
    /// subscribers may have had it, so the publisher's retry can cost a duplicate).
    ///
    /// `sub` is the subscription's broker-wide id: a front end that has replaced the
    /// subscription meanwhile (the batch goes to the old, closed queue) keeps nothing.
    fn persist(&self, _sub: u64, _batch: &Arc<Batch>) -> io::Result<()> {
        Ok(())
    }
}

/// Whose turn it is to write a connection's socket, as its writer task and the sinks see it
/// under the front end's lock.
///
/// The writer owns the socket except while `idle`: it sets that only with nothing in hand,
/// right before it waits, and takes the socket back first thing when it wakes, with any
/// spill (the rest of a partial direct write, already half on the wire, so it goes first).
pub struct DirectSocket {
    /// None once the writer has stopped: nobody writes any more.
    wr: Option<Arc<WriteHalf>>,
    idle: bool,
    /// Encoding buffer; between a partial direct write and the writer's next pass, the
    /// unwritten rest.
    spill: BytesMut,
}

/// What a direct write came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Written {
    /// Whole on the wire.
    All,
    /// Partly on the wire; the rest waits in the spill for the writer, which must be woken.
    Part,
    /// Nothing written (the socket is not idle, is full, or the packet did not encode).
    Declined,
    /// The socket failed; the writer, which must be woken, meets the same error and closes.
    Broken,
}

impl Written {
    /// The delivery is the connection's now (whole or in the spill).
    pub fn delivered(self) -> bool {
        matches!(self, Written::All | Written::Part)
    }

    /// The writer must be woken to finish a spill or to meet a failure.
    pub fn wake_writer(self) -> bool {
        matches!(self, Written::Part | Written::Broken)
    }
}

impl DirectSocket {
    /// The writer holds the socket until its first [`DirectSocket::set_idle`].
    pub fn new(wr: Arc<WriteHalf>) -> Self {
        Self {
            wr: Some(wr),
            idle: false,
            spill: BytesMut::new(),
        }
    }

    /// Publishers may write now.
    pub fn is_idle(&self) -> bool {
        self.idle && self.wr.is_some()
    }

    /// Encodes one packet with `encode` (which appends to the buffer it is given) and writes
    /// it without waiting. Declines unless idle.
    pub fn write<E>(&mut self, encode: impl FnOnce(&mut BytesMut) -> Result<(), E>) -> Written {
        let Some(wr) = self.wr.as_ref().filter(|_| self.idle) else {
            return Written::Declined;
        };
        debug_assert!(self.spill.is_empty(), "an idle socket has no spill");
        if encode(&mut self.spill).is_err() {
            self.spill.clear();
            return Written::Declined;
        }
        match wr.try_write(&self.spill) {
            Ok(n) if n == self.spill.len() => {
                self.spill.clear();
                Written::All
            }
            Ok(n) if n > 0 => {
                self.spill.advance(n);
                self.idle = false;
                Written::Part
            }
            Ok(_) => {
                self.spill.clear();
                Written::Declined
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                self.spill.clear();
                Written::Declined
            }
            Err(_) => {
                self.spill.clear();
                self.idle = false;
                Written::Broken
            }
        }
    }

    /// The writer takes the socket back; the rest of a partial direct write is put before
    /// whatever `out` holds, to be sent first.
    pub fn take_back(&mut self, out: &mut BytesMut) {
        self.idle = false;
        if self.spill.is_empty() {
            return;
        }
        if out.is_empty() {
            out.extend_from_slice(&self.spill);
        } else {
            let mut joined = BytesMut::with_capacity(self.spill.len() + out.len());
            joined.extend_from_slice(&self.spill);
            joined.extend_from_slice(out);
            *out = joined;
        }
        self.spill.clear();
    }

    /// The writer has nothing in hand and is about to wait.
    pub fn set_idle(&mut self) {
        self.idle = true;
    }

    /// The writer stopped: no more direct writes, and the socket is let go so it closes
    /// when the connection's own halves are dropped.
    pub fn stop(&mut self) {
        self.idle = false;
        self.wr = None;
    }
}
