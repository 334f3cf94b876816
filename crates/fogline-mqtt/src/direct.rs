//! MQTT deliveries written on the publisher's task (see `fogline_broker::direct`).
//!
//! A session attached over TCP carries a [`DirectOut`] in its connection handle. While the
//! connection task has nothing in hand (`idle`, set right before it waits, cleared first
//! thing when it wakes), a publisher's task holding the session lock may encode a PUBLISH
//! and write it to the socket itself. A partial write leaves the rest in `spill`, which the
//! task sends before anything else.
//!
//! QoS 0 and, for a session that is not journaled, QoS 1 go this way (a QoS 1 message takes
//! a packet id and enters the inflight window, within the client's receive maximum, as the
//! session's own path would do). QoS 2 and a durable session's QoS 1 (journaled before it
//! is sent) stay on the session's path. A sink also declines
//! when the session lock is busy (never waiting on it, so no lock order to keep), when the
//! session has pending messages (nothing may be overtaken), and for expired messages and
//! packets over the client's maximum size (the session's path drops those).

use std::io;
use std::sync::{Arc, Weak};

use bytes::{Buf, BytesMut};
use fogline_broker::{Batch, DirectSink};
use tokio::net::tcp::OwnedWriteHalf;

use crate::codec::{self, Packet, QoS, Version};
use crate::message::Message;
use crate::session::{qos_of, Outgoing, Session, State};

/// A connection's socket as publishers' tasks may write to it.
pub(crate) struct DirectOut {
    pub wr: Arc<OwnedWriteHalf>,
    pub version: Version,
    pub client_max_packet: usize,
    /// The client's receive maximum (QoS 1 inflight window).
    pub receive_max: usize,
    pub idle: bool,
    /// Encoding buffer; after a partial write, the unwritten rest.
    pub spill: BytesMut,
}

/// One subscription of a session, as the broker offers it batches.
pub(crate) struct SubSink {
    pub session: Weak<Session>,
    pub key: String,
    /// The server journals durable sessions (a store is configured).
    pub journaled: bool,
}

impl DirectSink for SubSink {
    fn try_deliver(&self, b: &Batch) -> bool {
        if b.count() != 1 {
            return false;
        }
        let Some(session) = self.session.upgrade() else {
            return false;
        };
        let Some(mut guard) = session.state.try_lock() else {
            return false;
        };
        match deliver(&mut guard, self, b) {
            Written::All => true,
            Written::Part => {
                drop(guard);
                session.waker.notify_one();
                true
            }
            Written::Declined => false,
            Written::Broken => {
                drop(guard);
                session.waker.notify_one();
                false
            }
        }
    }
}

enum Written {
    All,
    /// The rest is in `spill`; the connection task must be woken.
    Part,
    Declined,
    /// The socket failed; the connection task will meet the same error.
    Broken,
}

fn deliver(st: &mut State, sink: &SubSink, b: &Batch) -> Written {
    if !st.pending.is_empty() {
        return Written::Declined;
    }
    let Some(d) = st.conn.as_ref().and_then(|h| h.direct.as_ref()) else {
        return Written::Declined;
    };
    if !d.idle {
        return Written::Declined;
    }
    let (version, client_max_packet, receive_max) = (d.version, d.client_max_packet, d.receive_max);
    let (Some(entry), Some(rec)) = (st.subs.get(&sink.key), b.records.iter().next()) else {
        return Written::Declined;
    };
    let received = if rec.timestamp != 0 {
        rec.timestamp
    } else {
        b.timestamp
    };
    let msg = Message::from_record(b.topic.clone(), rec.headers, rec.payload, received);
    let qos = msg.qos.min(qos_of(entry.rec.qos));
    let fits = match qos {
        QoS::AtMostOnce => true,
        // A durable session journals QoS 1 messages before they are sent: its path.
        QoS::AtLeastOnce => !(sink.journaled && st.expiry > 0) && st.inflight.len() < receive_max,
        QoS::ExactlyOnce => false,
    };
    let now = fogline_broker::now_micros();
    if !fits || msg.expired(now) {
        return Written::Declined;
    }
    let retain = entry.rec.retain_as_published && msg.retain;
    let sub_id = entry.rec.sub_id;
    let mut publish = msg.to_publish(qos, retain, 0, sub_id.as_slice(), now);
    if publish.encoded_len(version) > client_max_packet {
        return Written::Declined;
    }
    if qos == QoS::AtLeastOnce {
        publish.pkid = st.alloc_pkid();
    }
    let pkid = publish.pkid;
    let Some(d) = st.conn.as_mut().and_then(|h| h.direct.as_mut()) else {
        return Written::Declined; // checked above, under the same lock
    };
    let written = write(d, &Packet::Publish(publish));
    match written {
        Written::All | Written::Part => {
            let seq = st.next_seq;
            st.next_seq += 1;
            if qos == QoS::AtLeastOnce {
                st.inflight.push_back(Outgoing {
                    seq,
                    msg,
                    qos,
                    retain,
                    sub_ids: sub_id.into_iter().collect(),
                    pkid,
                    released: false,
                });
            }
        }
        Written::Declined | Written::Broken if pkid != 0 => st.mark_pkid(pkid, false),
        Written::Declined | Written::Broken => {}
    }
    written
}

/// Encodes `p` and writes it to the socket without waiting.
fn write(d: &mut DirectOut, p: &Packet) -> Written {
    if codec::encode(p, d.version, &mut d.spill).is_err() {
        d.spill.clear();
        return Written::Declined;
    }
    match d.wr.try_write(&d.spill) {
        Ok(n) if n == d.spill.len() => {
            d.spill.clear();
            Written::All
        }
        Ok(n) if n > 0 => {
            d.spill.advance(n);
            d.idle = false;
            Written::Part
        }
        Ok(_) => {
            d.spill.clear();
            Written::Declined
        }
        Err(e) => {
            d.spill.clear();
            if e.kind() == io::ErrorKind::WouldBlock {
                Written::Declined
            } else {
                d.idle = false;
                Written::Broken
            }
        }
    }
}
