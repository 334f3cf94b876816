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
use tokio::time::Instant;

use crate::batch::Batch;
use crate::config::SlowConsumerPolicy;
use crate::stats::{BrokerStats, DropReason};

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
    /// This push found the queue full under the disconnect policy and closed it
    /// (slow consumer); the batch was not queued.
    Disconnected,
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
    /// Publishers inside `wait_for_space`: a drain wakes them only when there are any
    /// (counted under this lock, so a wake-up is never missed).
    space_waiters: usize,
    /// Told when the queue is closed as a slow consumer (see [`SubQueue::on_cut_off`]).
    cut_off: Option<Arc<Notify>>,
    /// Since when the subscriber has taken nothing while records waited: set when a batch
    /// enters an empty queue and by a drain that leaves records behind.
    waiting_since: Option<Instant>,
}

/// Un-counts a waiting publisher however its wait ends (including being dropped).
struct SpaceWaiter<'a>(&'a SubQueue);

impl Drop for SpaceWaiter<'_> {
    fn drop(&mut self) {
        self.0.state.lock().space_waiters -= 1;
    }
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
    /// Where the records it drops are counted, by reason.
    stats: Option<Arc<BrokerStats>>,
}

impl SubQueue {
    /// A queue whose pushes wake `waker` (the subscriber's writer task).
    pub fn new(limits: QueueLimits, waker: Arc<Notify>) -> Self {
        Self {
            state: Mutex::new(State::default()),
            waker,
            space: Notify::new(),
            limits,
            stats: None,
        }
    }

    /// As [`SubQueue::new`], counting the records it drops in `stats`.
    pub fn with_stats(limits: QueueLimits, waker: Arc<Notify>, stats: Arc<BrokerStats>) -> Self {
        Self {
            stats: Some(stats),
            ..Self::new(limits, waker)
        }
    }

    fn count_dropped(&self, reason: DropReason, records: u64) {
        if let Some(s) = &self.stats {
            s.add_dropped(reason, records);
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
        let fits = |st: &State| self.fits(st, count, weight);
        if !fits(&st) {
            match self.limits.policy {
                // Known stuck: it has taken nothing for a whole block timeout while records
                // waited, so no publisher waits for it again.
                SlowConsumerPolicy::Block if self.stuck(&st) => {
                    drop(st);
                    self.close(CloseReason::SlowConsumer);
                    return Push::Disconnected;
                }
                SlowConsumerPolicy::Block => return Push::Full,
                SlowConsumerPolicy::Disconnect => {
                    drop(st);
                    self.close(CloseReason::SlowConsumer);
                    return Push::Disconnected;
                }
                SlowConsumerPolicy::DropOldest => {
                    let before = st.dropped_total;
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
                    self.count_dropped(DropReason::QueueFull, st.dropped_total - before);
                }
            }
        }
        if st.high.is_empty() && st.normal.is_empty() {
            st.waiting_since = Some(Instant::now());
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
        st.waiting_since = (st.records > 0).then(Instant::now);
        let dropped = std::mem::take(&mut st.dropped_unreported);
        let closed = if st.records == 0 { st.closed } else { None };
        let wake = out.len() > before && st.space_waiters > 0;
        drop(st);
        if wake {
            self.space.notify_waiters();
        }
        Drained { dropped, closed }
    }

    /// True when a high-priority batch is waiting.
    pub fn has_high(&self) -> bool {
        !self.state.lock().high.is_empty()
    }

    /// When a full queue counts as stuck: a block timeout after the subscriber last took
    /// something while records waited. `None` when empty.
    pub fn stuck_deadline(&self) -> Option<Instant> {
        let st = self.state.lock();
        st.waiting_since.map(|t| t + self.limits.block_timeout)
    }

    fn stuck(&self, st: &State) -> bool {
        st.waiting_since
            .is_some_and(|t| t.elapsed() >= self.limits.block_timeout)
    }

    /// Has `notify` told when the queue is closed as a slow consumer, so that its
    /// connection can end even while a write to it is stuck.
    pub fn on_cut_off(&self, notify: Arc<Notify>) {
        self.state.lock().cut_off = Some(notify);
    }

    /// True when a batch of `count` records and `weight` bytes may be queued.
    fn fits(&self, st: &State, count: usize, weight: usize) -> bool {
        // An empty queue takes any one batch (else an oversized one could never pass);
        // "empty" means no batches, so batches of no records cannot pile up past the limits.
        (st.high.is_empty() && st.normal.is_empty())
            || (st.records + count <= self.limits.max_records
                && st.bytes + weight <= self.limits.max_bytes)
    }

    /// Waits until `batch` would fit (or the queue closed) or `timeout`
    /// passes; false on timeout. Uses the same test as [`SubQueue::push`], so
    /// a publisher never spins between the two.
    pub async fn wait_for_space(&self, batch: &Batch, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.space.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let _waiter = {
                let mut st = self.state.lock();
                if st.closed.is_some() || self.fits(&st, batch.count() as usize, batch.weight()) {
                    return true;
                }
                st.space_waiters += 1;
                SpaceWaiter(self)
            };
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return false;
            }
        }
    }

    /// Closes the queue; what is queued is discarded and the writer is woken.
    pub fn close(&self, reason: CloseReason) {
        let mut st = self.state.lock();
        if st.closed.is_none() {
            st.closed = Some(reason);
        }
        if reason == CloseReason::SlowConsumer {
            self.count_dropped(DropReason::SlowConsumer, st.records as u64);
            if let Some(n) = &st.cut_off {
                n.notify_one();
            }
        }
        st.high.clear();
        st.normal.clear();
        st.records = 0;
        st.bytes = 0;
        st.waiting_since = None;
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

    /// Bytes currently queued.
    pub fn bytes(&self) -> usize {
        self.state.lock().bytes
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when nothing is queued and the queue is open: a batch may bypass it.
    pub fn is_idle(&self) -> bool {
        let st = self.state.lock();
        st.records == 0 && st.closed.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fogline_wire::RecordBlock;

    fn batch(n: u32, priority: bool) -> Arc<Batch> {
        let payloads: Vec<Vec<u8>> = (0..n).map(|i| i.to_le_bytes().to_vec()).collect();
        let records =
            RecordBlock::from_records(payloads.iter().map(|p| (0, &b""[..], p.as_slice())))
                .expect("block");
        Arc::new(Batch {
            topic: "t".into(),
            records,
            timestamp: 1,
            priority,
            origin: 0,
        })
    }

    fn queue(max_records: usize, policy: SlowConsumerPolicy) -> SubQueue {
        let limits = QueueLimits {
            max_records,
            max_bytes: usize::MAX,
            policy,
            block_timeout: Duration::from_millis(10),
        };
        SubQueue::new(limits, Arc::new(Notify::new()))
    }

    #[test]
    fn high_priority_is_drained_first() {
        let q = queue(100, SlowConsumerPolicy::Block);
        let bulk = batch(3, false);
        let alarm = batch(1, true);
        assert_eq!(q.push(&bulk), Push::Queued);
        assert_eq!(q.push(&alarm), Push::Queued);
        assert!(q.has_high());
        let mut out = Vec::new();
        q.drain(&mut out, usize::MAX);
        assert!(Arc::ptr_eq(&out[0], &alarm));
        assert!(Arc::ptr_eq(&out[1], &bulk));
        assert!(q.is_empty());
    }

    #[test]
    fn drop_oldest_counts_and_reports_once() {
        let q = queue(10, SlowConsumerPolicy::DropOldest);
        for _ in 0..5 {
            assert_eq!(q.push(&batch(4, false)), Push::Queued);
        }
        assert!(q.len() <= 10);
        let mut out = Vec::new();
        let d = q.drain(&mut out, usize::MAX);
        let kept: u32 = out.iter().map(|b| b.count()).sum();
        assert_eq!(u64::from(kept) + d.dropped, 20);
        assert_eq!(q.dropped_total(), d.dropped);
        assert_eq!(q.drain(&mut out, usize::MAX).dropped, 0, "reported once");
    }

    #[test]
    fn batches_of_no_records_count_against_the_byte_limit() {
        let limits = QueueLimits {
            max_records: 100,
            max_bytes: 64,
            policy: SlowConsumerPolicy::Block,
            block_timeout: Duration::from_millis(10),
        };
        let q = SubQueue::new(limits, Arc::new(Notify::new()));
        // Each weighs its topic's byte: the queue fills at 64 of them. It took every one
        // while it held no records.
        let queued = (0..1000)
            .take_while(|_| q.push(&batch(0, false)) == Push::Queued)
            .count();
        assert_eq!(queued, 64);
    }

    #[test]
    fn block_reports_full_and_disconnect_closes() {
        let q = queue(4, SlowConsumerPolicy::Block);
        assert_eq!(q.push(&batch(4, false)), Push::Queued);
        assert_eq!(q.push(&batch(1, false)), Push::Full);
        let q = queue(4, SlowConsumerPolicy::Disconnect);
        assert_eq!(q.push(&batch(4, false)), Push::Queued);
        assert_eq!(q.push(&batch(1, false)), Push::Disconnected);
        assert_eq!(q.closed(), Some(CloseReason::SlowConsumer));
        assert!(q.is_empty(), "a cut-off subscriber's backlog is released");
        // Only the push that cut it off says so (the slow-consumer count is taken from it).
        assert_eq!(q.push(&batch(1, false)), Push::Closed);
    }

    #[test]
    fn an_oversized_batch_enters_an_empty_queue() {
        let q = queue(2, SlowConsumerPolicy::Block);
        assert_eq!(q.push(&batch(5, false)), Push::Queued);
        assert_eq!(q.len(), 5);
    }

    #[test]
    fn drain_respects_the_budget_but_takes_at_least_one() {
        let q = queue(1000, SlowConsumerPolicy::Block);
        for _ in 0..10 {
            q.push(&batch(10, false));
        }
        let mut out = Vec::new();
        q.drain(&mut out, 1);
        assert_eq!(out.len(), 1);
        assert_eq!(q.len(), 90);
    }

    #[tokio::test]
    async fn waiting_publisher_wakes_when_the_reader_drains() {
        let q = Arc::new(queue(4, SlowConsumerPolicy::Block));
        q.push(&batch(4, false));
        let q2 = q.clone();
        let waiter = tokio::spawn(async move {
            q2.wait_for_space(&batch(4, false), Duration::from_secs(5))
                .await
        });
        tokio::task::yield_now().await;
        let mut out = Vec::new();
        q.drain(&mut out, usize::MAX);
        assert!(waiter.await.expect("task"), "woken before the timeout");
        assert!(
            q.wait_for_space(&batch(9, false), Duration::from_millis(1))
                .await,
            "an empty queue has room at once"
        );
    }

    #[tokio::test]
    async fn waiting_is_for_room_for_the_whole_batch() {
        let q = queue(10, SlowConsumerPolicy::Block);
        q.push(&batch(8, false));
        // Room for two records is not room for five: this must wait, not spin.
        assert!(
            !q.wait_for_space(&batch(5, false), Duration::from_millis(50))
                .await
        );
        assert!(
            q.wait_for_space(&batch(2, false), Duration::from_millis(50))
                .await
        );
    }
}
