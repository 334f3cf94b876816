//! QoS 1 PUBLISHes that wait for `fsync` durability before their PUBACK (see
//! [`fogline_broker::AckQueue`]). A client keeps up to the receive maximum of them in flight;
//! each is stored as it arrives, one flush covers many, and they are delivered (in order,
//! [MQTT-4.6.0-5]) and acknowledged in the order received. Any other packet waits until they
//! are answered, so nothing overtakes them.

use fogline_broker::{BrokerError, Handoff, Stored};

use super::{Conn, End};
use crate::codec::{Ack, Packet, Version};

impl Conn {
    /// Answers every waiting QoS 1 message that is durable (or refused), in order.
    pub(super) async fn answer_ready(&mut self) -> Result<(), End> {
        while let Some((pkid, stored)) = self.acks.pop_ready() {
            let handoff = if self.acks.is_empty() {
                Handoff::Direct
            } else {
                Handoff::Queue
            };
            self.answer_qos1(pkid, stored, handoff).await?;
        }
        Ok(())
    }

    /// Waits for and answers every waiting QoS 1 message.
    pub(super) async fn drain_acks(&mut self) -> Result<(), End> {
        while !self.acks.is_empty() {
            self.acks.oldest_ready().await;
            self.answer_ready().await?;
        }
        Ok(())
    }

    /// Delivers a durable QoS 1 message and sends its PUBACK [MQTT-4.3.2-2], or refuses it.
    pub(super) async fn answer_qos1(
        &mut self,
        pkid: u16,
        stored: Result<Stored, BrokerError>,
        handoff: Handoff,
    ) -> Result<(), End> {
        let reason = match stored {
            Ok(s) => {
                self.shared.broker.deliver(s, handoff).await;
                self.shared.flush_durable();
                0
            }
            Err(e) => refusal(self.version, &e)?,
        };
        let mut ack = Ack::ok(pkid);
        ack.reason = reason;
        self.send(&Packet::PubAck(ack));
        Ok(())
    }
}

/// The PUBACK or PUBREC reason code for a message the broker refused. A 3.1.1 client cannot
/// be refused, so its connection closes instead [MQTT-3.3.5-2]. Over the broker's message
/// limit is 0x97 (quota exceeded); 0x95 is no PUBACK/PUBREC reason code [MQTT-3.4.2-1],
/// [MQTT-3.5.2-1].
pub(super) fn refusal(version: Version, e: &BrokerError) -> Result<u8, End> {
    match e {
        _ if version == Version::V4 => Err(End::error(0x80, e.to_string())),
        BrokerError::MessageTooLarge { .. } => Ok(0x97),
        _ => Ok(0x80),
    }
}
