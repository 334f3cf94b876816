//! The next offset of a stream, for consumers waiting for new records.
//!
//! Appends happen on every publish and waiting consumers are rare, so an append costs one
//! atomic store and one atomic load unless somebody waits. (A `tokio::sync::watch` channel
//! wakes its waiter lists on every send: about a tenth of the server's time at 500k
//! publishes/s.)
//!
//! No lost wake-up: a waiter counts itself, arms its `Notified`, then reads the offset; an
//! append stores the offset, then reads the count (all `SeqCst`). Either the waiter reads the
//! new offset, or the append sees the waiter and notifies it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};

use tokio::sync::Notify;

/// A stream's next offset, observable by waiters.
#[derive(Debug)]
pub struct Tail {
    next: AtomicU64,
    waiters: AtomicUsize,
    notify: Notify,
}

impl Tail {
    /// A tail at `next`.
    pub fn new(next: u64) -> Tail {
        Tail {
            next: AtomicU64::new(next),
            waiters: AtomicUsize::new(0),
            notify: Notify::new(),
        }
    }

    /// Moves the tail forward to `next` (never back: appends on other threads may report
    /// out of order) and wakes the waiters, if any.
    pub fn set(&self, next: u64) {
        self.next.fetch_max(next, SeqCst);
        if self.waiters.load(SeqCst) > 0 {
            self.notify.notify_waiters();
        }
    }

    /// Returns once the next offset is past `cursor` (at once if it already is).
    pub async fn wait_past(&self, cursor: u64) {
        self.waiters.fetch_add(1, SeqCst);
        let _counted = Counted(&self.waiters);
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.next.load(SeqCst) > cursor {
                return;
            }
            notified.await;
        }
    }
}

/// Un-counts a waiter however its wait ends (including being dropped by a timeout).
struct Counted<'a>(&'a AtomicUsize);

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn a_waiter_wakes_on_the_append_past_its_cursor() {
        let t = Arc::new(Tail::new(5));
        tokio::time::timeout(Duration::from_secs(1), t.wait_past(4))
            .await
            .expect("already past");
        let w = tokio::spawn({
            let t = t.clone();
            async move { t.wait_past(6).await }
        });
        tokio::task::yield_now().await;
        t.set(6); // not past 6 yet
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!w.is_finished());
        t.set(7);
        tokio::time::timeout(Duration::from_secs(1), w)
            .await
            .expect("woken")
            .unwrap();
        assert_eq!(t.waiters.load(SeqCst), 0);
    }

    /// Appends on two threads may report their ends out of order: the tail keeps the larger.
    #[test]
    fn the_tail_never_moves_back() {
        let t = Tail::new(0);
        t.set(9);
        t.set(7);
        assert_eq!(t.next.load(SeqCst), 9);
    }

    #[tokio::test]
    async fn a_timed_out_waiter_is_uncounted() {
        let t = Tail::new(0);
        let r = tokio::time::timeout(Duration::from_millis(10), t.wait_past(0)).await;
        assert!(r.is_err());
        assert_eq!(t.waiters.load(SeqCst), 0);
    }

    #[test]
    fn no_wake_up_is_lost_between_threads() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let t = Arc::new(Tail::new(0));
            let waiter = tokio::spawn({
                let t = t.clone();
                async move {
                    for cursor in 0..20_000u64 {
                        t.wait_past(cursor).await;
                    }
                }
            });
            for next in 1..=20_000u64 {
                t.set(next);
                if next % 64 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            tokio::time::timeout(Duration::from_secs(10), waiter)
                .await
                .expect("every wait ends")
                .unwrap();
        });
    }
}
