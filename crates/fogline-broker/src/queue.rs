//! A live subscription's bounded queue with a priority lane.
//!
//! Invariants: `records` and `bytes` are the sums over both lanes; the queue
//! never holds more than its limits except a single batch larger than the
//! limit on its own (accepted into an empty queue, so no subscriber starves);
//! the high lane is always drained before the normal one.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::batch::Batch;
use crate::config::SlowConsumerPolicy;

/// Bounds and policy of one queue.
#[derive(Clone, Copy, Debug)]
pub struct QueueLimits {
    /// Most records queued.
    pub max_records: usize,
    /// Most bytes queued.
    pub max_bytes: usize,
    /// What happens when full.
    pub policy: SlowConsumerPolicy,
    /// With `Block`, how long a publisher waits before cutting the subscriber off.
    pub block_timeout: Duration,
}

/// Why a queue was closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// Unsubscribed or the subscriber went away.
    Unsubscribed,
    /// The subscriber could not keep up (disconnect policy or block timeout).
    SlowConsumer,
}

/// Outcome of offering a batch to a queue.
#[derive(Debug, PartialEq, Eq)]
pub enum Push {
    /// Queued (possibly after dropping older records).
    Queued,
    /// Full under the block policy: wait with [`SubQueue::wait_for_space`] and retry.
    Full,
    /// The queue is closed; the batch was not queued.
    Closed,
}

#[derive(Default)]
struct State {
    high: VecDeque<Arc<Batch>>,
    normal: VecDeque<Arc<Batch>>,
    records: usize,
    bytes: usize,
    dropped_unreported: u64,
    dropped_total: u64,
    closed: Option<CloseReason>,
}

/// What [`SubQueue::drain`] took.
#[derive(Debug, Default)]
pub struct Drained {
    /// Records dropped since the last drain (to tell the subscriber).
    pub dropped: u64,
    /// Set once the queue is closed and empty.
    pub closed: Option<CloseReason>,
}

/// The queue between the publish path and one subscriber's writer.
pub struct SubQueue {
    state: Mutex<State>,
    waker: Arc<Notify>,
    space: Notify,
    limits: QueueLimits,
}

impl SubQueue {
    /// A queue whose pushes wake `waker` (the subscriber's writer task).
    pub fn new(limits: QueueLimits, waker: Arc<Notify>) -> Self {
        Self {
            state: Mutex::new(State::default()),
            waker,
            space: Notify::new(),
            limits,
        }
    }

    /// The limits this queue was made with.
    pub fn limits(&self) -> QueueLimits {
        self.limits
    }

    /// Offers a batch, applying the slow-consumer policy when full.
    pub fn push(&self, batch: &Arc<Batch>) -> Push {
        let weight = batch.weight();
        let count = batch.count() as usize;
        let mut st = self.state.lock();
        if st.closed.is_some() {
            return Push::Closed;
        }
        let fits = |st: &State| {
            st.records == 0
                || (st.records + count <= self.limits.max_records
                    && st.bytes + weight <= self.limits.max_bytes)
        };
        if !fits(&st) {
            match self.limits.policy {
                SlowConsumerPolicy::Block => return Push::Full,
                SlowConsumerPolicy::Disconnect => {
                    drop(st);
                    self.close(CloseReason::SlowConsumer);
                    return Push::Closed;
                }
                SlowConsumerPolicy::DropOldest => {
                    while !fits(&st) {
                        let Some(old) = st.normal.pop_front().or_else(|| st.high.pop_front())
                        else {
                            break;
                        };
                        st.records -= old.count() as usize;
                        st.bytes -= old.weight();
                        st.dropped_unreported += u64::from(old.count());
                        st.dropped_total += u64::from(old.count());
                    }
                }
            }
        }
        st.records += count;
        st.bytes += weight;
        if batch.priority {
            st.high.push_back(batch.clone());
        } else {
            st.normal.push_back(batch.clone());
        }
        drop(st);
        self.waker.notify_one();
        Push::Queued
    }

    /// Moves queued batches into `out`: high-priority ones first, then normal
    /// ones until `budget` bytes are taken (always at least one batch).
    pub fn drain(&self, out: &mut Vec<Arc<Batch>>, budget: usize) -> Drained {
        let mut st = self.state.lock();
        let mut taken = 0usize;
        let before = out.len();
        while let Some(b) = st.high.pop_front() {
            taken += b.weight();
            st.records -= b.count() as usize;
            out.push(b);
        }
        while taken < budget || out.len() == before {
            let Some(b) = st.normal.pop_front() else {
                break;
            };
            taken += b.weight();
            st.records -= b.count() as usize;
            out.push(b);
        }
        st.bytes -= taken;
        let dropped = std::mem::take(&mut st.dropped_unreported);
        let closed = if st.records == 0 { st.closed } else { None };
        drop(st);
        if out.len() > before {
            self.space.notify_waiters();
        }
        Drained { dropped, closed }
    }

    /// True when a high-priority batch is waiting.
    pub fn has_high(&self) -> bool {
        !self.state.lock().high.is_empty()
    }

    /// Waits until the writer takes something or `timeout` passes; false on timeout.
    pub async fn wait_for_space(&self, timeout: Duration) -> bool {
        let notified = self.space.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        {
            let st = self.state.lock();
            if st.closed.is_some()
                || st.records < self.limits.max_records && st.bytes < self.limits.max_bytes
            {
                return true;
            }
        }
        tokio::time::timeout(timeout, notified).await.is_ok()
    }

    /// Closes the queue; what is queued is discarded and the writer is woken.
    pub fn close(&self, reason: CloseReason) {
        let mut st = self.state.lock();
        if st.closed.is_none() {
            st.closed = Some(reason);
        }
        st.high.clear();
        st.normal.clear();
        st.records = 0;
        st.bytes = 0;
        drop(st);
        self.waker.notify_one();
        self.space.notify_waiters();
    }

    /// Why the queue closed, if it did.
    pub fn closed(&self) -> Option<CloseReason> {
        self.state.lock().closed
    }

    /// Records dropped by the drop-oldest policy over the queue's life.
    pub fn dropped_total(&self) -> u64 {
        self.state.lock().dropped_total
    }

    /// Records currently queued.
    pub fn len(&self) -> usize {
        self.state.lock().records
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
