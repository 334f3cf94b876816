//! Deliveries written on the publisher's task (see `fogline_broker::Handoff::Direct`).
//!
//! A queued delivery costs a wake-up and a task switch before the subscriber's writer sends
//! it; on a one-thread server the writer runs only after the publisher's task has gone back
//! to its socket. Mosquitto writes to the subscriber inside its publish handler instead. A
//! TCP connection here does the same while its writer is idle: the publisher's task encodes
//! the `Deliver` frame and writes it to the socket itself.
//!
//! Who may write is a [`DirectSocket`] under this connection's lock. A sink declines while
//! replies are waiting (and the broker offers nothing while its subscription has queued
//! batches), so nothing overtakes what was queued before it.

use std::sync::{Arc, Weak};

use fogline_broker::{Batch, DirectSink, DirectSocket, WriteHalf};
use fogline_wire::FLAG_HIGH_PRIORITY;
use parking_lot::{Mutex, MutexGuard};

use crate::connection::Conn;
use crate::outbuf::SHARE_MIN;

/// A connection's socket as the publishers' tasks see it.
pub(crate) struct Direct {
    socket: Mutex<DirectSocket>,
}

/// Keeps direct writes out while it lives (see [`Direct::hold`]).
pub(crate) struct Hold<'a> {
    _socket: MutexGuard<'a, DirectSocket>,
}

impl Direct {
    pub fn new(wr: Arc<WriteHalf>) -> Direct {
        Direct {
            socket: Mutex::new(DirectSocket::new(wr)),
        }
    }

    /// The writer takes the socket back; the rest of a partial direct write goes to `out`
    /// (empty at the start of a pass), to be sent before anything else.
    pub fn take_back(&self, out: &mut bytes::BytesMut) {
        debug_assert!(
            out.is_empty(),
            "the writer starts a pass with nothing in hand"
        );
        self.socket.lock().take_back(out);
    }

    /// Keeps direct writes out until the guard drops: a subscription made meanwhile gets its
    /// `SubOk` queued before any delivery can reach the socket.
    pub fn hold(&self) -> Hold<'_> {
        Hold {
            _socket: self.socket.lock(),
        }
    }

    /// The writer has nothing in hand and is about to wait.
    pub fn set_idle(&self) {
        self.socket.lock().set_idle();
    }

    /// The writer stopped (or the connection is going away): no more direct writes, and the
    /// socket is released so it closes when the connection's own halves are dropped.
    pub fn stop(&self) {
        self.socket.lock().stop();
    }
}

/// One subscription's direct sink.
pub(crate) struct Sink {
    pub conn: Weak<Conn>,
    pub sub_id: u32,
}

impl DirectSink for Sink {
    fn try_deliver(&self, b: &Batch) -> bool {
        // Large blocks go through the writer, which sends them from where they are.
        if b.weight() >= SHARE_MIN {
            return false;
        }
        let Some(conn) = self.conn.upgrade() else {
            return false;
        };
        let Some(direct) = conn.direct.as_ref() else {
            return false;
        };
        let mut socket = direct.socket.lock();
        if !socket.is_idle() || conn.replies_waiting() {
            return false;
        }
        let flags = if b.priority { FLAG_HIGH_PRIORITY } else { 0 };
        let written = socket.write(|buf| {
            fogline_wire::encode_deliver(
                buf,
                self.sub_id,
                flags,
                b.timestamp,
                0,
                b.topic.as_str(),
                b.count(),
                b.records.as_bytes(),
            )
        });
        drop(socket);
        if written.wake_writer() {
            conn.waker.notify_one();
        }
        let delivered = written.delivered();
        if delivered {
            conn.client
                .count_out(u64::from(b.count()), b.weight() as u64);
        }
        delivered
    }
}
