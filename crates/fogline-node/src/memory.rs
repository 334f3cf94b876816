//! The memory task: hands heap memory that connections freed back to the operating system.
//!
//! glibc's allocator keeps freed memory for reuse and returns it to the system only from the
//! top of a heap. Memory freed anywhere else, in the main heap and in the arena of each
//! runtime thread, stays resident for good: after a burst of connections ended (thousands of
//! clients reconnecting, a network coming back) the process kept its peak, and each new
//! burst, placed differently, added to it. Cycles of 5,000 MQTT clients connecting,
//! receiving and leaving grew RssAnon by tens of megabytes a cycle while the live heap
//! stayed at a few (issue 31, item 2; the figures are in its commit). `malloc_trim(0)`
//! gives every free page of every arena back (`madvise`), so memory returns near where it
//! was before the burst.
//!
//! A trim walks each arena's free lists under that arena's lock, so it runs on a blocking
//! thread, at most every [`TRIM_EVERY`], and only once at least [`TRIM_AFTER`] connections
//! have ended since the last one: a node whose connections stay pays nothing. Other
//! allocators (musl's, which returns memory as it frees it) need nothing: there the task
//! does not run.

use std::time::Duration;

use fogline_broker::Broker;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often the task looks at the connections that ended.
const TRIM_EVERY: Duration = Duration::from_secs(5);

/// Connections that must have ended since the last trim for the next one.
const TRIM_AFTER: u64 = 64;

/// Allocations at least this large get pages of their own (`mmap`), handed back the moment
/// they are freed.
///
/// glibc starts at 128 KiB but raises the threshold to the size of each such block freed (up
/// to 32 MiB), after which large blocks come from the heaps and stay there: a burst of
/// connections that each grew a read buffer to 14 MiB for a frame that never completed
/// (issue 31, item 1) left 31 MiB resident after they closed, trimmed or not. Fixed at 4 MiB,
/// it left 4 MiB. Below 4 MiB nothing changes: the frames of ordinary messages still reuse
/// heap memory without a system call.
const MMAP_THRESHOLD: i32 = 4 << 20;

/// Fixes the allocator's `mmap` threshold (see [`MMAP_THRESHOLD`]); once per process.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` sets an allocator parameter; it is safe to call at any time.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

/// Starts the task when the allocator keeps freed memory (glibc); `None` otherwise. It ends
/// when `true` is sent.
pub(crate) fn spawn(broker: Broker) -> Option<(watch::Sender<bool>, JoinHandle<()>)> {
    if !TRIMS {
        return None;
    }
    tune_allocator();
    let (stop, mut stopped) = watch::channel(false);
    let task = tokio::spawn(async move {
        let mut tick = tokio::time::interval(TRIM_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut ended_at_trim = broker.clients().ended();
        loop {
            tokio::select! {
                _ = stopped.wait_for(|s| *s) => return,
                _ = tick.tick() => {}
            }
            let ended = broker.clients().ended();
            if ended - ended_at_trim < TRIM_AFTER {
                continue;
            }
            ended_at_trim = ended;
            match tokio::task::spawn_blocking(trim).await {
                Ok(took) => {
                    tracing::debug!(us = took.as_micros() as u64, "freed memory returned")
                }
                Err(_) => tracing::warn!("memory trim panicked"),
            }
        }
    });
    Some((stop, task))
}

/// Whether [`trim`] does anything with this build's allocator.
const TRIMS: bool = cfg!(all(target_os = "linux", target_env = "gnu"));

/// Returns the allocator's free pages to the system; how long it took.
fn trim() -> Duration {
    let started = std::time::Instant::now();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases memory that no allocation uses; 0 keeps no pad.
    unsafe {
        libc::malloc_trim(0);
    }
    started.elapsed()
}
