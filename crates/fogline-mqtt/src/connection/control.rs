//! PUBLISHes to the control topics of Associative Rendezvous (see `crate::profile`):
//! `$fogline/announce/<topic>` announces or withdraws a producer; `$fogline/notify/` is the
//! server's alone. Never routed to subscribers or streams.

use super::{Conn, End};
use crate::codec::{Ack, Packet, Publish, QoS, Version};
use crate::profile::{self, Announce, Refusal};
use crate::session::Write;
use crate::store::entry::Entry;

impl Conn {
    /// A PUBLISH to a control topic, never routed: an announcement on
    /// `$fogline/announce/<topic>` (see `profile`), or one to `$fogline/notify/`, refused as
    /// only the server sends there. QoS 1 and 2 are answered as other messages are (after
    /// those still waiting, in order), with the refusal's reason code (MQTT 5).
    pub(super) async fn on_control(&mut self, p: &Publish, topic: &str) -> Result<(), End> {
        let outcome = match topic.strip_prefix(profile::ANNOUNCE_PREFIX) {
            Some(announced) => match profile::read_announce(announced, &p.payload) {
                Ok(Announce::Withdraw(t)) => {
                    self.announced.withdraw(&t);
                    Ok(())
                }
                // Announcing is the first step of publishing: it asks the same right.
                Ok(Announce::Set(t, _)) if !self.access.may_publish(&t) => Err(Refusal {
                    reason: 0x87,
                    why: format!("may not publish to {t:?}"),
                }),
                Ok(Announce::Set(t, profile)) => self.announced.set(
                    &self.shared.broker,
                    &self.session,
                    self.conn_id,
                    (t, profile),
                    self.shared.config.max_subscriptions,
                ),
                Err(refusal) => Err(refusal),
            },
            None => Err(Refusal {
                reason: 0x90,
                why: format!(
                    "{topic}: only the server publishes on {}",
                    profile::NOTIFY_PREFIX
                ),
            }),
        };
        let reason = match outcome {
            Ok(()) => 0,
            Err(r) => {
                tracing::warn!(client = %self.session.client_id, topic, reason = r.reason, "control PUBLISH ignored: {}", r.why);
                r.reason
            }
        };
        if p.qos == QoS::AtMostOnce {
            return Ok(());
        }
        self.drain_acks().await?; // nothing overtakes the messages still waiting
        let mut ack = Ack::ok(p.pkid);
        if self.version == Version::V5 {
            ack.reason = reason;
        }
        if p.qos == QoS::AtLeastOnce {
            self.send(&Packet::PubAck(ack));
            return Ok(());
        }
        if ack.reason == 0 {
            // Recognises a redelivery, which must not be applied again [MQTT-4.3.3-9]. Not
            // written, a restart answers its PUBREL with 0x92, which ends the exchange too.
            let session = self.session.clone();
            let mut st = session.state.lock();
            st.qos2_in.insert(p.pkid);
            let entry = Entry::Qos2In {
                client: &session.client_id,
                pkid: p.pkid,
            };
            let _ = session.journal(&self.shared, &mut st, entry, Write::BestEffort);
        }
        self.send(&Packet::PubRec(ack));
        Ok(())
    }
}
