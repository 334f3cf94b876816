//! Messages to the client: sending from the session's pending queue within
//! the receive maximum, and redelivery after a reconnect.

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
    pub(super) fn resend_inflight(&mut self, st: &mut State) {
        let now = fogline_broker::now_micros();
        let items: Vec<_> = st.inflight.iter().cloned().collect();
        for o in items {
            if o.released {
                self.send(&Packet::PubRel(Ack::ok(o.pkid)));
            } else {
                let mut p = o.msg.to_publish(o.qos, o.retain, o.pkid, &o.sub_ids, now);
                p.dup = true; // [MQTT-3.3.1-1]
                self.send(&Packet::Publish(p));
            }
        }
    }
}
