//! Messages to the client: sending from the session's pending queue within
//! the receive maximum, and redelivery after a reconnect.

use std::collections::VecDeque;

use super::{Conn, OUT_LIMIT};
use crate::codec::{Ack, Packet, QoS};
use crate::session::{Outgoing, State, Write};
use crate::store::entry::Entry;

impl Conn {
    /// Sends pending messages while the inflight window and the output
    /// buffer have room; true when it stopped for the buffer only.
    pub(super) fn send_pending(&mut self, st: &mut State) -> bool {
        let session = self.session.clone();
        if st.resends > 0 && !self.resend_waiting(st) {
            return self.out.len() >= OUT_LIMIT;
        }
        while let Some(front) = st.pending.front() {
            if self.out.len() >= OUT_LIMIT {
                return true;
            }
            if front.qos != QoS::AtMostOnce && st.inflight.len() >= self.receive_max {
                return false; // [MQTT-3.3.4-9] the client's receive maximum
            }
            let Some(mut o) = st.pending.pop_front() else {
                break;
            };
            let now = o.msg.expiry_clock();
            let publish = o.msg.to_publish(o.qos, o.retain, 0, &o.sub_ids, now);
            let expired = o.msg.expired(now);
            if expired || publish.encoded_len(self.version) > self.client_max_packet {
                // [MQTT-3.3.2-5] expired; [MQTT-3.1.2-25] larger than the client accepts: dropped as if delivered.
                if o.qos != QoS::AtMostOnce {
                    session.journal_done(&self.shared, st, o.seq);
                }
                if expired {
                    let stats = self.shared.broker.stats();
                    stats.add_dropped(fogline_broker::DropReason::Expired, 1);
                }
                continue;
            }
            if o.qos == QoS::AtMostOnce {
                self.send(&Packet::Publish(publish));
                continue;
            }
            o.pkid = st.alloc_pkid();
            let mut publish = publish;
            publish.pkid = o.pkid;
            let (seq, pkid, qos) = (o.seq, o.pkid, o.qos);
            // Inflight before its entry is written: a whole-session write (`resync`) then
            // holds it.
            st.inflight.push_back(o);
            let sent = Entry::MsgSent {
                client: &session.client_id,
                seq,
                pkid,
            };
            if qos == QoS::AtLeastOnce {
                // Not written, a restart sends it again under a new packet id: a duplicate.
                let _ = session.journal(&self.shared, st, sent, Write::BestEffort);
            } else if session
                .journal(&self.shared, st, sent, Write::Required)
                .is_err()
            {
                // QoS 2 is not sent unjournaled: after a restart its id would be free here
                // while the client still holds it, and the next message given that id would
                // be taken for this one and dropped. It waits for the journal: the
                // connection tries again after a pause (`held_back`), or at its next wake.
                if let Some(mut o) = st.inflight.pop_back() {
                    st.mark_pkid(pkid, false);
                    o.pkid = 0;
                    st.pending.push_front(o);
                }
                self.held_back = true;
                return false;
            }
            self.send(&Packet::Publish(publish));
        }
        true
    }

    /// After a reconnect: every unacknowledged PUBLISH again with DUP set and its
    /// original packet id, and PUBREL for those already received, in the original order
    /// [MQTT-4.4.0-1]. The new connection's limits apply: past its receive maximum
    /// [MQTT-4.9.0-2] (a QoS 2 message counts until its PUBCOMP) a PUBLISH waits, marked
    /// `resend`, until acks make room (`resend_waiting`); one larger than its Maximum
    /// Packet Size is dropped as if delivered [MQTT-3.1.2-25].
    pub(super) fn resend_inflight(&mut self, st: &mut State) {
        let mut used = 0usize;
        st.resends = 0;
        let mut kept = VecDeque::with_capacity(st.inflight.len());
        for mut o in std::mem::take(&mut st.inflight) {
            o.resend = false;
            if o.released {
                self.send(&Packet::PubRel(Ack::ok(o.pkid)));
                used += 1;
                kept.push_back(o);
            } else if used >= self.receive_max {
                o.resend = true;
                st.resends += 1;
                kept.push_back(o);
            } else if self.publish_again(st, &o) {
                used += 1;
                kept.push_back(o);
            }
        }
        st.inflight = kept;
    }

    /// Sends the PUBLISHes `resend_inflight` held back, in order, while the receive
    /// maximum has room; true when none is left.
    fn resend_waiting(&mut self, st: &mut State) -> bool {
        let mut i = 0;
        while st.resends > 0 && i < st.inflight.len() {
            if st.inflight.len() - st.resends >= self.receive_max || self.out.len() >= OUT_LIMIT {
                return false;
            }
            if !st.inflight[i].resend {
                i += 1;
                continue;
            }
            st.resends -= 1;
            st.inflight[i].resend = false;
            let o = st.inflight[i].clone();
            if self.publish_again(st, &o) {
                i += 1;
            } else {
                st.inflight.remove(i);
            }
        }
        st.resends == 0
    }

    /// Sends `o` again (DUP, its packet id); false, and it is dropped as if delivered, when
    /// it is larger than the client accepts [MQTT-3.1.2-25].
    fn publish_again(&mut self, st: &mut State, o: &Outgoing) -> bool {
        let now = fogline_broker::now_micros();
        let mut p = o.msg.to_publish(o.qos, o.retain, o.pkid, &o.sub_ids, now);
        p.dup = true; // [MQTT-3.3.1-1]
        if p.encoded_len(self.version) > self.client_max_packet {
            st.mark_pkid(o.pkid, false);
            let session = self.session.clone();
            session.journal_done(&self.shared, st, o.seq);
            return false;
        }
        self.send(&Packet::Publish(p));
        true
    }
}
