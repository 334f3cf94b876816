//! Messages to the client: sending from the session's pending queue within
//! the receive maximum, and redelivery after a reconnect.

use std::collections::VecDeque;

use super::{Conn, OUT_LIMIT};
use crate::codec::{Ack, Packet, QoS};
use crate::session::State;
use crate::store::entry::Entry;

impl Conn {
    /// Sends pending messages while the inflight window and the output
    /// buffer have room; true when it stopped for the buffer only.
    pub(super) fn send_pending(&mut self, st: &mut State) -> bool {
        let session = self.session.clone();
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
                    session.journal(
                        &self.shared,
                        st,
                        Entry::MsgDel {
                            client: &session.client_id,
                            seq: o.seq,
                        },
                    );
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
            session.journal(
                &self.shared,
                st,
                Entry::MsgSent {
                    client: &session.client_id,
                    seq: o.seq,
                    pkid: o.pkid,
                },
            );
            self.send(&Packet::Publish(publish));
            st.inflight.push_back(o);
        }
        true
    }

    /// After a reconnect: every unacknowledged PUBLISH again with DUP set,
    /// and PUBREL for those already received, in the original order [MQTT-4.4.0-1].
    /// The new connection's limits apply: past its receive maximum [MQTT-4.9.0-2] a message
    /// goes back to the front of `pending` (its packet id freed) to be sent as acks come,
    /// and one larger than its Maximum Packet Size is dropped as if delivered
    /// [MQTT-3.1.2-25]. PUBRELs do not count: their PUBREC has arrived.
    pub(super) fn resend_inflight(&mut self, st: &mut State) {
        let session = self.session.clone();
        let now = fogline_broker::now_micros();
        let mut unacked = 0usize;
        let mut kept = VecDeque::with_capacity(st.inflight.len());
        let mut back = Vec::new();
        for o in std::mem::take(&mut st.inflight) {
            if o.released {
                self.send(&Packet::PubRel(Ack::ok(o.pkid)));
                kept.push_back(o);
                continue;
            }
            if unacked >= self.receive_max {
                back.push(o);
                continue;
            }
            let mut p = o.msg.to_publish(o.qos, o.retain, o.pkid, &o.sub_ids, now);
            p.dup = true; // [MQTT-3.3.1-1]
            if p.encoded_len(self.version) > self.client_max_packet {
                st.mark_pkid(o.pkid, false);
                session.journal(
                    &self.shared,
                    st,
                    Entry::MsgDel {
                        client: &session.client_id,
                        seq: o.seq,
                    },
                );
                continue;
            }
            unacked += 1;
            self.send(&Packet::Publish(p));
            kept.push_back(o);
        }
        st.inflight = kept;
        for mut o in back.into_iter().rev() {
            st.mark_pkid(o.pkid, false);
            o.pkid = 0;
            // Put again: a replay then finds it pending, not sent under the freed id.
            session.journal(
                &self.shared,
                st,
                Entry::MsgPut {
                    client: &session.client_id,
                    seq: o.seq,
                    qos: o.qos as u8,
                    retain: o.retain,
                    sub_ids: &o.sub_ids,
                    msg: &o.msg,
                },
            );
            st.pending.push_front(o);
        }
    }
}
