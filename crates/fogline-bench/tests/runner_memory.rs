//! The runner against the in-process driver: delivery, fault accounting, pacing.

use std::sync::Arc;
use std::time::Duration;

use fogline_bench::cell::{Budget, CellSpec, Pace, Rate, Reading};
use fogline_bench::drivers::memory::{Faults, MemoryDriver};
use fogline_bench::runner::run_cell;
use fogline_bench::Driver;

fn spec(rate: Rate, budget: Budget, subs: u32) -> CellSpec {
    let mut s = CellSpec::new("test", 256, rate, budget);
    s.subscribers = subs;
    s.straggler_timeout = Duration::from_millis(200);
    s
}

#[tokio::test]
async fn max_rate_one_to_four_delivers_everything() {
    let d: Arc<dyn Driver> = Arc::new(MemoryDriver::default());
    let r = run_cell(d, &spec(Rate::Max, Budget::Messages(5000), 4), "t", None, 1)
        .await
        .unwrap();
    assert_eq!(r.sent, 5000);
    assert_eq!(r.delivery.expected, 20_000);
    assert_eq!(r.delivery.received, 20_000);
    assert_eq!(r.delivery.lost, 0);
    assert_eq!(r.latency.count, 20_000);
    assert!(r.throughput_msgs > 0.0);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
}

/// At max rate on a one-thread runtime (the pinned load generator's), a publisher whose
/// sends never wait still lets the subscribers run: without that they would receive
/// everything only after the producer stopped, a latency of the whole cell.
#[tokio::test(flavor = "current_thread")]
async fn max_rate_producer_does_not_starve_subscribers_on_one_thread() {
    let d: Arc<dyn Driver> = Arc::new(MemoryDriver::default());
    let cell = spec(Rate::Max, Budget::Time(Duration::from_millis(600)), 1);
    let r = run_cell(d, &cell, "t", None, 1).await.unwrap();
    assert!(r.delivery.received > 1000, "{:?}", r.delivery);
    let p99_ms = r.latency.p99_us / 1000.0;
    assert!(
        p99_ms < 100.0,
        "p99 {p99_ms} ms: subscribers ran only at the end"
    );
}

async fn run_with(faults: Faults) -> fogline_bench::accounting::Delivery {
    let d: Arc<dyn Driver> = Arc::new(MemoryDriver::with_faults(faults));
    run_cell(d, &spec(Rate::Max, Budget::Messages(1000), 1), "t", None, 1)
        .await
        .unwrap()
        .delivery
}

#[tokio::test]
async fn injected_loss_is_counted() {
    let d = run_with(Faults {
        drop_every: 10,
        ..Faults::default()
    })
    .await;
    assert_eq!((d.expected, d.received, d.lost), (1000, 900, 100), "{d:?}");
    assert_eq!((d.duplicates, d.reordered), (0, 0), "{d:?}");
}

#[tokio::test]
async fn injected_duplicates_are_counted() {
    let d = run_with(Faults {
        duplicate_every: 25,
        ..Faults::default()
    })
    .await;
    assert_eq!(
        (d.received, d.lost, d.duplicates, d.reordered),
        (1000, 0, 40, 0),
        "{d:?}"
    );
}

#[tokio::test]
async fn injected_reordering_is_counted() {
    let d = run_with(Faults {
        swap_every: 50,
        ..Faults::default()
    })
    .await;
    // 49, 99, ... are held back; 999, the last, has no successor and is released in order
    // by the final flush: 19 late arrivals.
    assert_eq!(
        (d.received, d.lost, d.duplicates, d.reordered),
        (1000, 0, 0, 19),
        "{d:?}"
    );
}

#[tokio::test]
async fn fixed_rate_takes_its_time() {
    let d: Arc<dyn Driver> = Arc::new(MemoryDriver::default());
    let r = run_cell(
        d,
        &spec(Rate::Hz(100.0), Budget::Messages(20), 1),
        "t",
        None,
        1,
    )
    .await
    .unwrap();
    assert_eq!(r.delivery.received, 20);
    // 20 messages at 100 Hz: 19 gaps of 10 ms.
    assert!(
        r.send_seconds >= 0.18 && r.send_seconds < 1.0,
        "{}",
        r.send_seconds
    );
}

#[tokio::test]
async fn many_producers_with_normal_gaps() {
    let d: Arc<dyn Driver> = Arc::new(MemoryDriver::default());
    let mut s = spec(Rate::Hz(50.0), Budget::Messages(5), 1);
    s.producers = 20;
    s.pace = Pace::Normal(0.002);
    let r = run_cell(d, &s, "t", None, 1).await.unwrap();
    assert_eq!(r.sent, 100);
    assert_eq!(r.delivery.received, 100);
}

#[tokio::test]
async fn producer_alone_and_time_budget() {
    let d: Arc<dyn Driver> = Arc::new(MemoryDriver::default());
    let r = run_cell(
        d,
        &spec(Rate::Max, Budget::Time(Duration::from_millis(50)), 0),
        "t",
        None,
        1,
    )
    .await
    .unwrap();
    assert!(r.sent > 0);
    assert_eq!(r.delivery.expected, 0);
    assert!(r.publish_rate > 0.0);
    assert_eq!(r.throughput_msgs, r.publish_rate.max(r.throughput_msgs));
}

#[tokio::test]
async fn replay_is_unsupported_without_a_log() {
    let d: Arc<dyn Driver> = Arc::new(MemoryDriver::default());
    let mut s = spec(Rate::Max, Budget::Messages(10), 1);
    s.reading = Reading::Replay;
    let e = run_cell(d, &s, "t", None, 1).await.err().unwrap();
    assert!(e.to_string().contains("does not support"), "{e}");
}
