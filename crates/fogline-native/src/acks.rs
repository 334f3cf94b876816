//! Answers to acked Publish frames that waited for `fsync` durability (see
//! [`fogline_broker::AckQueue`]): delivered, then acknowledged, in the order they came.

use std::sync::Arc;

use fogline_broker::{AckQueue, BrokerError, Handoff, Stored};
use fogline_wire::Frame;

use crate::connection::Conn;
use crate::errors::broker_code;

/// A connection's acked batches not yet answered, by request id.
pub(crate) type Acks = AckQueue<u64>;

/// Every waiting batch that can be answered now, in order.
pub(crate) async fn answer_ready(conn: &Arc<Conn>, acks: &mut Acks) {
    while let Some((request_id, stored)) = acks.pop_ready() {
        let handoff = if acks.is_empty() {
            Handoff::Direct
        } else {
            Handoff::Queue
        };
        answer(conn, request_id, stored, handoff).await;
    }
}

/// Waits for and answers every waiting batch.
pub(crate) async fn drain(conn: &Arc<Conn>, acks: &mut Acks) {
    while !acks.is_empty() {
        acks.oldest_ready().await;
        answer_ready(conn, acks).await;
    }
}

/// Delivers and acknowledges a durable batch, or reports why it was refused.
pub(crate) async fn answer(
    conn: &Arc<Conn>,
    request_id: u64,
    stored: Result<Stored, BrokerError>,
    handoff: Handoff,
) {
    match stored {
        Ok(s) => {
            let count = s.count();
            match conn.broker.deliver(s, handoff).await {
                Ok(()) => conn.reply(&Frame::PubAck { request_id, count }),
                // An MQTT durable session could not journal it: stored and delivered, but
                // refused, so the publisher sends it again (a duplicate, never a loss).
                Err(e) => conn.error(request_id, broker_code(&e), e.to_string()),
            }
        }
        Err(e) => conn.error(request_id, broker_code(&e), e.to_string()),
    }
}
