//! A consumer over the link.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::clients::ClientHandle;
use crate::consumer::{Consumer, Delivery};
use crate::error::BrokerError;

/// A consumer on a stream: records from its start position, handed out by
/// [`fetch`](LinkConsumer::fetch), acknowledged with [`ack`](LinkConsumer::ack); with an ack
/// timeout, a record not acked in time is handed out again (at least once). A durable one's
/// acknowledged position is kept across restarts (written at most every 100 ms while acks
/// arrive, and when it is dropped).
pub struct LinkConsumer {
    consumer: Consumer,
    client: Arc<ClientHandle>,
}

impl LinkConsumer {
    pub(super) fn new(consumer: Consumer, client: Arc<ClientHandle>) -> LinkConsumer {
        LinkConsumer { consumer, client }
    }

    /// The next offset it reads.
    pub fn cursor(&self) -> u64 {
        self.consumer.cursor()
    }

    /// Every record below this offset was acknowledged (or filtered out).
    pub fn floor(&self) -> u64 {
        self.consumer.floor()
    }

    /// Up to `max` records: ones whose ack timeout passed first, then new ones. Waits up to
    /// `wait` for at least one; returns an empty list when none came.
    ///
    /// # Errors
    /// The stream cannot be read, or was deleted (`UnknownStream`).
    pub async fn fetch(
        &mut self,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<Delivery>, BrokerError> {
        let until = Instant::now() + wait;
        loop {
            let got = self.consumer.poll(max.max(1), Instant::now())?;
            if !got.is_empty() || Instant::now() >= until {
                let bytes: usize = got
                    .iter()
                    .map(|d| d.record.topic.len() + d.record.headers.len() + d.record.payload.len())
                    .sum();
                self.client.count_out(got.len() as u64, bytes as u64);
                return Ok(got);
            }
            // A poll that read its byte budget without a match leaves records past the
            // cursor, so the wait ends at once: let other tasks run first.
            tokio::task::yield_now().await;
            self.consumer.wait(until).await;
        }
    }

    /// Acknowledges offsets (unknown or already acknowledged ones are ignored).
    ///
    /// # Errors
    /// The last write of a durable consumer's position failed (it is tried again).
    pub fn ack(&mut self, offsets: &[u64]) -> Result<(), BrokerError> {
        self.consumer.ack(offsets);
        self.consumer.save_if_due(Instant::now())
    }

    /// Writes a durable consumer's position now (dropping it does too).
    ///
    /// # Errors
    /// As [`LinkConsumer::ack`].
    pub fn save(&mut self) -> Result<(), BrokerError> {
        self.consumer.save()
    }
}
