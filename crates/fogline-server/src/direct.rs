//! Deliveries written on the publisher's task (see `fogline_broker::Handoff::Direct`).
//!
//! A queued delivery costs a wake-up and a task switch before the subscriber's writer sends
//! it; on a one-thread server the writer runs only after the publisher's task has gone back
//! to its socket. Mosquitto writes to the subscriber inside its publish handler instead. A
//! TCP connection here does the same while its writer is idle: the publisher's task encodes
//! the `Deliver` frame and writes it to the socket itself.
//!
//! Who may write: the writer task, except while `idle` is set, when whoever holds the lock
//! may. The writer sets `idle` only with nothing in hand, right before it waits, and clears
//! it first thing when it wakes, taking over any `spill` (the rest of a partial direct
//! write, which is already half on the wire and so goes first). A sink declines while
//! replies are waiting or its subscription has queued batches, so nothing overtakes what
//! was queued before it.

use std::io;
use std::sync::{Arc, Weak};

use bytes::{Buf, BytesMut};
use fogline_broker::{Batch, DirectSink};
use fogline_wire::FLAG_HIGH_PRIORITY;
use parking_lot::Mutex;
use tokio::net::tcp::OwnedWriteHalf;

use crate::connection::Conn;
use crate::outbuf::SHARE_MIN;

/// A connection's socket as the publishers' tasks see it.
pub(crate) struct Direct {
    state: Mutex<State>,
}

struct State {
    /// None once the writer has stopped: nobody writes any more.
    wr: Option<Arc<OwnedWriteHalf>>,
    idle: bool,
    /// Encoding buffer; between a partial direct write and the writer's next pass, the
    /// unwritten rest.
    spill: BytesMut,
}

impl Direct {
    pub fn new(wr: Arc<OwnedWriteHalf>) -> Direct {
        Direct {
            state: Mutex::new(State {
                wr: Some(wr),
                idle: false,
                spill: BytesMut::new(),
            }),
        }
    }

    /// The writer takes the socket back; the rest of a partial direct write goes to `out`
    /// (empty at the start of a pass), to be sent before anything else.
    pub fn take_back(&self, out: &mut BytesMut) {
        let mut st = self.state.lock();
        st.idle = false;
        if !st.spill.is_empty() {
            debug_assert!(
                out.is_empty(),
                "the writer starts a pass with nothing in hand"
            );
            out.extend_from_slice(&st.spill);
            st.spill.clear();
        }
    }

    /// Keeps direct writes out until the guard drops: a subscription made meanwhile gets its
    /// `SubOk` queued before any delivery can reach the socket.
    pub fn hold(&self) -> impl Drop + '_ {
        self.state.lock()
    }

    /// The writer has nothing in hand and is about to wait.
    pub fn set_idle(&self) {
        self.state.lock().idle = true;
    }

    /// The writer stopped (or the connection is going away): no more direct writes, and the
    /// socket is released so it closes when the connection's own halves are dropped.
    pub fn stop(&self) {
        let mut st = self.state.lock();
        st.idle = false;
        st.wr = None;
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
        let mut guard = direct.state.lock();
        let st = &mut *guard;
        if !st.idle || conn.replies_waiting() {
            return false;
        }
        let Some(wr) = st.wr.as_ref() else {
            return false;
        };
        let flags = if b.priority { FLAG_HIGH_PRIORITY } else { 0 };
        let block = b.records.as_bytes();
        let topic = b.topic.as_str();
        let encoded = fogline_wire::encode_deliver(
            &mut st.spill,
            self.sub_id,
            flags,
            b.timestamp,
            0,
            topic,
            b.count(),
            block,
        );
        if encoded.is_err() {
            st.spill.clear();
            return false;
        }
        match wr.try_write(&st.spill) {
            Ok(n) if n == st.spill.len() => {
                st.spill.clear();
                true
            }
            Ok(n) if n > 0 => {
                // The rest must follow before anything else: the writer takes it over.
                st.spill.advance(n);
                st.idle = false;
                drop(guard);
                conn.waker.notify_one();
                true
            }
            Ok(_) => {
                st.spill.clear();
                false
            }
            Err(e) => {
                st.spill.clear();
                if e.kind() != io::ErrorKind::WouldBlock {
                    // A broken socket: the writer meets the same error and closes.
                    st.idle = false;
                    drop(guard);
                    conn.waker.notify_one();
                }
                false
            }
        }
    }
}
