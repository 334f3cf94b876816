//! What the runner times: from the send time, read once a message is built, to the moment
//! the driver says its client library handed the message over; duplicates are not timed,
//! and a producer's set-up (its first send) is not in the measured phase.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use fogline_bench::cell::{Budget, CellSpec, Rate};
use fogline_bench::driver::DriverResult;
use fogline_bench::runner::run_cell;
use fogline_bench::{Driver, Publisher, Received, Subscriber};
use tokio::sync::{mpsc, Mutex};

/// Hands every message to its one subscriber twice; the subscriber stamps a message when it
/// takes it off the channel, then spends `glue` before returning it, as a driver's own copy
/// or acknowledgement would.
/// Each producer's first send takes `setup`, as a connection's first request can.
struct SlowGlue {
    tx: mpsc::UnboundedSender<Bytes>,
    rx: Mutex<Option<mpsc::UnboundedReceiver<Bytes>>>,
    glue: Duration,
    setup: Duration,
}

struct Pub(mpsc::UnboundedSender<Bytes>, Option<Duration>);

#[async_trait]
impl Publisher for Pub {
    async fn send(&mut self, payload: Bytes) -> DriverResult<()> {
        if let Some(d) = self.1.take() {
            tokio::time::sleep(d).await;
        }
        let _ = self.0.send(payload.clone());
        let _ = self.0.send(payload);
        Ok(())
    }

    async fn flush(&mut self) -> DriverResult<()> {
        Ok(())
    }
}

struct Sub(mpsc::UnboundedReceiver<Bytes>, Duration);

#[async_trait]
impl Subscriber for Sub {
    async fn recv(&mut self) -> DriverResult<Option<Received>> {
        let Some(m) = self.0.recv().await else {
            return Ok(None);
        };
        let got = Received::now(m);
        tokio::time::sleep(self.1).await;
        Ok(Some(got))
    }
}

#[async_trait]
impl Driver for SlowGlue {
    fn name(&self) -> &'static str {
        "slow-glue"
    }

    async fn publisher(&self, _topic: &str) -> DriverResult<Box<dyn Publisher>> {
        Ok(Box::new(Pub(self.tx.clone(), Some(self.setup))))
    }

    async fn subscriber(&self, _topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        let rx = self.rx.lock().await.take().expect("one subscriber");
        Ok(Box::new(Sub(rx, self.glue)))
    }
}

#[tokio::test]
async fn the_driver_s_own_work_after_the_hand_over_is_not_timed() {
    let (tx, rx) = mpsc::unbounded_channel();
    let glue = Duration::from_millis(30);
    let d: Arc<dyn Driver> = Arc::new(SlowGlue {
        tx,
        rx: Mutex::new(Some(rx)),
        glue,
        setup: Duration::ZERO,
    });
    // 10 messages 100 ms apart: each waits for no earlier one, so its latency is the
    // channel's, well under the 30 ms the subscriber spends after stamping it.
    let mut spec = CellSpec::new("t", 1 << 20, Rate::Hz(10.0), Budget::Messages(10));
    spec.straggler_timeout = Duration::from_millis(500);
    let r = run_cell(d, &spec, "t", None, 1).await.unwrap();
    assert_eq!(r.delivery.received, 10, "{:?}", r.delivery);
    // The last copy may still be in the channel when the cell ends.
    assert!(r.delivery.duplicates >= 9, "{:?}", r.delivery);
    assert_eq!(r.latency.count, 10, "duplicates are not timed");
    assert!(
        r.latency.p50_us < 15_000.0,
        "p50 {} us includes the subscriber's glue",
        r.latency.p50_us
    );
}

#[tokio::test]
async fn every_producer_is_set_up_before_the_measured_phase() {
    let (tx, rx) = mpsc::unbounded_channel();
    let d: Arc<dyn Driver> = Arc::new(SlowGlue {
        tx,
        rx: Mutex::new(Some(rx)),
        glue: Duration::ZERO,
        setup: Duration::from_millis(300),
    });
    // Three producers: the warm-up probes go through the first only, so the others' first
    // sends would take 300 ms inside the measured phase.
    let mut spec = CellSpec::new("t", 256, Rate::Hz(20.0), Budget::Messages(5));
    spec.producers = 3;
    spec.straggler_timeout = Duration::from_millis(500);
    let r = run_cell(d, &spec, "t", None, 1).await.unwrap();
    assert_eq!(r.delivery.received, 15, "{:?}", r.delivery);
    assert!(
        r.latency.max_us < 200_000.0,
        "max {} us holds a producer's set-up",
        r.latency.max_us
    );
}
