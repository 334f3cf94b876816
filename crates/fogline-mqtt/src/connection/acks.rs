//! QoS 1 and QoS 2 PUBLISHes that wait for `fsync` durability before their PUBACK or PUBREC
//! (see [`fogline_broker::AckQueue`]). A client keeps up to the receive maximum of them in
//! flight; each is stored as it arrives, one flush covers many, and they are delivered (in
//! order, [MQTT-4.6.0-5]) and acknowledged in the order received. Any other packet waits until
//! they are answered, so nothing overtakes them. A QoS 2 message enters `qos2_in` (which
//! recognises a redelivery) when it is answered; a redelivery of one still waiting first
//! waits for it (see `on_publish`).

use fogline_broker::{BrokerError, Handoff, Stored};

use super::{Conn, End};
use crate::codec::{Ack, Packet, QoS, Version};
use crate::session::Write;
use crate::store::entry::Entry;

impl Conn {
    /// Answers every waiting message that is durable (or refused), in order.
    pub(super) async fn answer_ready(&mut self) -> Result<(), End> {
        while let Some(((pkid, qos), stored)) = self.acks.pop_ready() {
            let handoff = if self.acks.is_empty() {
                Handoff::Direct
            } else {
                Handoff::Queue
            };
            self.answer(pkid, qos, stored, handoff).await?;
        }
        Ok(())
    }

    /// Waits for and answers every waiting message.
    pub(super) async fn drain_acks(&mut self) -> Result<(), End> {
        while !self.acks.is_empty() {
            self.acks.oldest_ready().await;
            self.answer_ready().await?;
        }
        Ok(())
    }

    /// Delivers a durable message and sends its PUBACK [MQTT-4.3.2-2] or PUBREC
    /// [MQTT-4.3.3-8], or refuses it (3.1.1: by ending the connection, `Err`; the messages
    /// after it are then delivered unacknowledged, see `Conn::refused`).
    ///
    /// The acknowledgement also promises that durable sessions will get the message: each
    /// journals it as the broker routes it there, also while it waits in their queues, and
    /// it is refused when one could not, or when any append that acknowledgements depend on
    /// failed (a full disk) meanwhile, whichever connection's entry it was. Refused, the
    /// publisher sends it again; acknowledged, a crash would lose it for them. Live
    /// subscribers may have it already, so a refusal favours a duplicate over a loss, for
    /// QoS 2 too.
    pub(super) async fn answer(
        &mut self,
        pkid: u16,
        qos: QoS,
        stored: Result<Stored, BrokerError>,
        handoff: Handoff,
    ) -> Result<(), End> {
        let reason = match self.settle(pkid, qos, stored, handoff).await {
            Ok(reason) => reason,
            Err(end) => {
                self.refused = true;
                return Err(end);
            }
        };
        if self.refused {
            return Ok(());
        }
        let mut ack = Ack::ok(pkid);
        ack.reason = reason;
        if qos == QoS::AtLeastOnce {
            self.send(&Packet::PubAck(ack));
        } else {
            self.send(&Packet::PubRec(ack));
        }
        Ok(())
    }

    /// Delivers a message (unless it could not be stored) and gives its PUBACK or PUBREC
    /// reason code; `Err` when a 3.1.1 connection must end instead.
    async fn settle(
        &mut self,
        pkid: u16,
        qos: QoS,
        stored: Result<Stored, BrokerError>,
        handoff: Handoff,
    ) -> Result<u8, End> {
        let failures = self.shared.journal_failures();
        let mut reason = match stored {
            // Durable sessions journal it as it is routed to them (`SubSink::persist`).
            Ok(s) => match self.shared.broker.deliver(s, handoff).await {
                Ok(()) => 0,
                Err(_) => not_journaled(self.version)?,
            },
            Err(e) => refusal(self.version, &e)?,
        };
        if reason == 0 && self.shared.journal_failures() != failures {
            reason = not_journaled(self.version)?;
        }
        if reason == 0 && qos == QoS::ExactlyOnce {
            // Journaled, it recognises a redelivery after a restart too.
            let mut st = self.session.state.lock();
            st.qos2_in.insert(pkid);
            let entry = Entry::Qos2In {
                client: &self.session.client_id,
                pkid,
            };
            if self
                .session
                .journal(&self.shared, &mut st, entry, Write::Required)
                .is_err()
            {
                // 5.0: refused, the exchange ends and the id is free again. 3.1.1: the
                // connection closes and the id stays known, so the redelivery that follows
                // is recognised (unless the node crashes first).
                reason = not_journaled(self.version)?;
                st.qos2_in.remove(&pkid);
            }
        }
        Ok(reason)
    }
}

/// The PUBACK or PUBREC reason code (0x80, unspecified error) for a message whose durable
/// state the journal did not take; a 3.1.1 client's connection closes unacknowledged.
pub(super) fn not_journaled(version: Version) -> Result<u8, End> {
    if version == Version::V4 {
        return Err(journal_failed());
    }
    Ok(0x80)
}

/// Ends a connection whose request could not be journaled: nothing is acknowledged, and
/// the client repeats it on its next connection.
pub(super) fn journal_failed() -> End {
    End::error(0x80, "cannot store the session state (see the server log)")
}

/// The PUBACK or PUBREC reason code for a message the broker refused. A 3.1.1 client cannot
/// be refused, so its connection closes instead [MQTT-3.3.5-2]. Over the broker's message
/// limit, or into a stream whose retention a bridge holds past its margin, is 0x97 (quota
/// exceeded); 0x95 is no PUBACK/PUBREC reason code [MQTT-3.4.2-1], [MQTT-3.5.2-1]. One the
/// ACL refuses is 0x87 (not authorized).
fn refusal(version: Version, e: &BrokerError) -> Result<u8, End> {
    match e {
        // Mosquitto's way with a 3.1.1 client: acknowledged and dropped (closing the
        // connection would only have it reconnect and publish again).
        BrokerError::NotAuthorized(_) if version == Version::V4 => Ok(0),
        BrokerError::NotAuthorized(_) => Ok(0x87),
        _ if version == Version::V4 => Err(End::error(0x80, e.to_string())),
        BrokerError::MessageTooLarge { .. } | BrokerError::Held { .. } => Ok(0x97),
        _ => Ok(0x80),
    }
}
