//! A live subscription over the link.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use fogline_wire::Str;
use tokio::sync::Notify;

use super::Link;
use crate::batch::Batch;
use crate::broker::{Broker, SubscribeOptions, Subscription};
use crate::clients::ClientHandle;
use crate::error::BrokerError;
use crate::queue::CloseReason;

/// Bytes taken from the queue at a time: a burst is handed over in pieces, so a
/// high-priority batch waits behind at most this much.
const DRAIN_BUDGET: usize = 64 * 1024;

/// One record received over the link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// Its topic.
    pub topic: Str,
    /// Microseconds since the UNIX epoch (the publisher's, else the broker's receive time).
    pub timestamp: u64,
    /// Its header block (see `fogline_wire::Headers`); empty when it has none.
    pub headers: Bytes,
    /// Its payload.
    pub payload: Bytes,
    /// Published with high priority.
    pub priority: bool,
}

/// A live subscription: records matching its filter, in each publisher's order, from the
/// moment it was made. Its queue is the broker's, bounded, with its slow-consumer policy; a
/// subscription cut off as slow (`disconnect`, or `block` past its timeout) ends, and
/// [`closed`](LinkSubscription::closed) says why. Dropping it unsubscribes.
pub struct LinkSubscription {
    broker: Broker,
    sub: Arc<Subscription>,
    waker: Arc<Notify>,
    ready: VecDeque<Arc<Batch>>,
    /// The batch being handed out record by record, and its records not handed out yet.
    current: Option<(Arc<Batch>, fogline_wire::RecordBlock)>,
    dropped: u64,
    client: Arc<ClientHandle>,
}

impl LinkSubscription {
    pub(super) fn new(
        link: &Link,
        filter: &str,
        opts: SubscribeOptions,
    ) -> Result<LinkSubscription, BrokerError> {
        let waker = Arc::new(Notify::new());
        let sub = link
            .broker
            .subscribe(filter, link.client.id(), opts, waker.clone())?;
        Ok(LinkSubscription {
            broker: link.broker.clone(),
            sub,
            waker,
            ready: VecDeque::new(),
            current: None,
            dropped: 0,
            client: link.client.clone(),
        })
    }

    /// Its topic filter.
    pub fn filter(&self) -> &str {
        self.sub.filter()
    }

    /// Records its queue dropped under the `drop-oldest` policy so far.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Why it ended, once it has: cut off as a slow consumer.
    pub fn closed(&self) -> Option<CloseReason> {
        self.sub.queue().closed()
    }

    /// The next batch (the records of one publish), high-priority ones first; `None` once
    /// the subscription has ended.
    pub async fn recv_batch(&mut self) -> Option<Arc<Batch>> {
        if let Some((batch, rest)) = self.current.take() {
            // What `recv` has not handed out of its batch yet comes first.
            if !rest.is_empty() {
                return Some(Arc::new(Batch {
                    topic: batch.topic.clone(),
                    records: rest,
                    timestamp: batch.timestamp,
                    priority: batch.priority,
                    origin: batch.origin,
                }));
            }
        }
        loop {
            let waker = self.waker.clone();
            let notified = waker.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.ready.is_empty() || self.sub.queue().has_high() {
                self.take();
            }
            if let Some(b) = self.ready.pop_front() {
                return Some(b);
            }
            if self.sub.queue().closed().is_some() {
                return None;
            }
            notified.await;
        }
    }

    /// The next record; `None` once the subscription has ended.
    pub async fn recv(&mut self) -> Option<Message> {
        loop {
            if let Some((batch, rest)) = &mut self.current {
                if let Some(r) = rest.pop_front() {
                    return Some(Message {
                        topic: batch.topic.clone(),
                        timestamp: if r.timestamp == 0 {
                            batch.timestamp
                        } else {
                            r.timestamp
                        },
                        headers: r.headers,
                        payload: r.payload,
                        priority: batch.priority,
                    });
                }
                self.current = None;
            }
            let batch = self.recv_batch().await?;
            let records = batch.records.clone();
            self.current = Some((batch, records));
        }
    }

    /// Moves what the queue holds into `ready`, high-priority batches to the front.
    fn take(&mut self) {
        let mut got = Vec::new();
        let drained = self.sub.queue().drain(&mut got, DRAIN_BUDGET);
        self.dropped += drained.dropped;
        let (records, bytes) = got.iter().fold((0u64, 0u64), |(r, b), x| {
            (r + u64::from(x.count()), b + x.weight() as u64)
        });
        self.client.count_out(records, bytes);
        let high = got.iter().take_while(|b| b.priority).count();
        for b in got.drain(..high).rev() {
            self.ready.push_front(b);
        }
        self.ready.extend(got);
    }
}

impl Drop for LinkSubscription {
    fn drop(&mut self) {
        self.broker.unsubscribe(&self.sub);
    }
}
