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

use fogline_broker::{Batch, ClientHandle, DirectSink, DirectSocket, Written};

use crate::codec::{self, Packet, QoS, Version};
use crate::message::Message;
use crate::session::{qos_of, Outgoing, Session, State};
use crate::shared::Shared;

/// A connection's socket as publishers' tasks may write to it.
pub(crate) struct DirectOut {
    pub socket: DirectSocket,
    /// Its connection in the node's list, whose traffic counts what is written here.
    pub client: Arc<ClientHandle>,
    pub version: Version,
    pub client_max_packet: usize,
    /// The client's receive maximum (QoS 1 inflight window).
    pub receive_max: usize,
}

/// One subscription of a session, as the broker offers it batches.
pub(crate) struct SubSink {
    pub session: Weak<Session>,
    pub shared: Weak<Shared>,
    pub key: String,
    /// The server journals durable sessions (a store is configured).
    pub journaled: bool,
}

impl DirectSink for SubSink {
    /// A durable session journals what it is routed as it is routed, so the publisher's
    /// acknowledgement covers it also while it waits in the queue (see `Session::persist`).
    fn persist(&self, sub: u64, b: &Arc<Batch>) -> io::Result<()> {
        if !self.journaled {
            return Ok(());
        }
        let (Some(session), Some(shared)) = (self.session.upgrade(), self.shared.upgrade()) else {
            return Ok(());
        };
        if !session.may_be_durable() {
            return Ok(()); // no lock taken for sessions that end with their connection
        }
        let mut st = session.state.lock();
        session
            .persist(&shared, &mut st, (&self.key, sub), b)
            .map_err(io::Error::other)
    }

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
        let written = deliver(&mut guard, self, b);
        drop(guard);
        if written.wake_writer() {
            session.waker.notify_one();
        }
        written.delivered()
    }
}

fn deliver(st: &mut State, sink: &SubSink, b: &Batch) -> Written {
    if !st.pending.is_empty() || st.resends > 0 {
        return Written::Declined; // older messages go first
    }
    let Some(d) = st.conn.as_ref().and_then(|h| h.direct.as_ref()) else {
        return Written::Declined;
    };
    if !d.socket.is_idle() {
        return Written::Declined;
    }
    let (version, client_max_packet, receive_max) = (d.version, d.client_max_packet, d.receive_max);
    let (Some(entry), Some(rec)) = (st.subs.get(&sink.key), b.records.iter_ref().next()) else {
        return Written::Declined;
    };
    let msg = Message::in_batch(b, rec);
    let qos = msg.qos.min(qos_of(entry.rec.qos));
    let fits = match qos {
        QoS::AtMostOnce => true,
        // A durable session journals QoS 1 messages before they are sent: its path.
        QoS::AtLeastOnce => !(sink.journaled && st.expiry > 0) && st.inflight.len() < receive_max,
        QoS::ExactlyOnce => false,
    };
    let now = msg.expiry_clock();
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
    let version = d.version;
    let size = (publish.topic.len() + publish.payload.len()) as u64;
    let written = d
        .socket
        .write(|buf| codec::encode(&Packet::Publish(publish), version, buf));
    if matches!(written, Written::All | Written::Part) {
        d.client.count_out(1, size);
    }
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
                    resend: false,
                });
            }
        }
        Written::Declined | Written::Broken if pkid != 0 => st.mark_pkid(pkid, false),
        Written::Declined | Written::Broken => {}
    }
    written
}
