//! Runs one cell against one driver: subscribe, warm up, send on schedule, wait for
//! stragglers, account.
//!
//! Order: subscribers connect first; producer 0 then sends warm-up probes (producer id
//! [`WARMUP_PRODUCER`]) until every subscriber has seen one, so slow joiners (ZeroMQ, Kafka
//! assignment) cannot eat the first measured messages. Timestamps come from
//! [`crate::clock::now_ns`] on both ends.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::accounting::{Arrival, Delivery, SubscriberLedger};
use crate::cell::{Budget, CellResult, CellSpec, Pace, Rate, Reading};
use crate::clock::now_ns;
use crate::driver::{Driver, DriverError, Publisher, Subscriber};
use crate::latency::LatencyRecorder;
use crate::payload::{self, Encoder, Header, WARMUP_PRODUCER};
use crate::procstat::Sampler;
use crate::quiet::Watch;

/// How long subscribers may take to see the first warm-up probe.
const WARMUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Errors that stop a cell before it measures anything.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A driver call failed while setting up.
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// Not every subscriber saw a warm-up probe in time.
    #[error("{system}: {ready} of {total} subscribers received a warm-up message within {secs} s")]
    NotReady {
        /// Which system.
        system: &'static str,
        /// Subscribers that were ready.
        ready: usize,
        /// Subscribers in the cell.
        total: usize,
        /// The timeout.
        secs: u64,
    },
}

struct SubOutcome {
    ledger: SubscriberLedger,
    latency: LatencyRecorder,
    last_ns: u64,
    error: Option<String>,
}

struct ProdOutcome {
    sent: u64,
    end_ns: u64,
    error: Option<String>,
}

/// Counters shared between the subscriber tasks and the runner.
#[derive(Default)]
struct Shared {
    ready: Vec<AtomicBool>,
    arrivals: AtomicU64,
    finished: AtomicU64,
}

fn spawn_subscriber(
    mut sub: Box<dyn Subscriber>,
    idx: usize,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
    record_latency: bool,
) -> JoinHandle<SubOutcome> {
    tokio::spawn(async move {
        let mut out = SubOutcome {
            ledger: SubscriberLedger::default(),
            latency: LatencyRecorder::new(),
            last_ns: 0,
            error: None,
        };
        loop {
            let msg = tokio::select! {
                biased;
                r = sub.recv() => r,
                _ = stop.changed() => break,
            };
            match msg {
                Ok(Some(m)) => match payload::decode(&m.payload) {
                    Some(h) if h.producer == WARMUP_PRODUCER => {
                        shared.ready[idx].store(true, Ordering::Release);
                    }
                    Some(h) => {
                        // A duplicate is counted, but neither timed nor taken for a message
                        // still awaited: redeliveries must not end the wait for stragglers.
                        if out.ledger.record(h.producer, h.seq) != Arrival::Duplicate {
                            if record_latency {
                                out.latency.record(m.at_ns.saturating_sub(h.sent_ns));
                            }
                            out.last_ns = out.last_ns.max(m.at_ns);
                            shared.arrivals.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    None => out.ledger.record_unexpected(),
                },
                Ok(None) => {
                    out.error = Some(format!(
                        "subscriber {idx}: subscription closed by the system"
                    ));
                    break;
                }
                Err(e) => {
                    out.error = Some(format!("subscriber {idx}: {e}"));
                    break;
                }
            }
        }
        shared.finished.fetch_add(1, Ordering::Relaxed);
        out
    })
}

fn next_gap(pace: Pace, hz: f64, rng: &mut fastrand::Rng) -> Duration {
    let mean = 1.0 / hz;
    let secs = match pace {
        Pace::Fixed => mean,
        Pace::Normal(sd) => {
            // Box-Muller: one standard normal from two uniforms.
            let u1 = rng.f64().max(f64::MIN_POSITIVE);
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * rng.f64()).cos();
            (mean + sd * z).max(0.0)
        }
    };
    Duration::from_secs_f64(secs)
}

async fn produce(
    mut p: Box<dyn Publisher>,
    id: u32,
    spec: CellSpec,
    start: tokio::time::Instant,
) -> ProdOutcome {
    let mut enc = Encoder::new(spec.size);
    let mut rng = fastrand::Rng::with_seed(u64::from(id) + 1);
    let mut seq = 0u64;
    let deadline = match spec.budget {
        Budget::Time(d) => Some(start + d),
        Budget::Messages(_) => None,
    };
    let limit = match spec.budget {
        Budget::Messages(n) => n,
        Budget::Time(_) => u64::MAX,
    };
    let mut error = None;
    let result: Result<(), DriverError> = async {
        match spec.rate {
            Rate::Max => {
                while seq < limit && deadline.is_none_or(|d| tokio::time::Instant::now() < d) {
                    let n = (spec.burst as u64).min(limit - seq);
                    for _ in 0..n {
                        let m = enc.encode_stamped(id, seq, now_ns);
                        p.send(m).await?;
                        seq += 1;
                        // A send that never waits (ZeroMQ's, the in-process driver's) would
                        // keep a one-thread load runtime from running the subscribers.
                        tokio::task::coop::consume_budget().await;
                    }
                    p.flush().await?;
                }
            }
            Rate::Hz(hz) => {
                // Producers start spread over one gap so they do not all fire at once.
                let mut due = start + next_gap(Pace::Fixed, hz, &mut rng).mul_f64(rng.f64());
                if spec.producers == 1 {
                    due = start;
                }
                let sleep = tokio::time::sleep_until(due);
                tokio::pin!(sleep);
                while seq < limit {
                    if let Some(d) = deadline {
                        if due >= d {
                            break;
                        }
                    }
                    sleep.as_mut().await;
                    due += next_gap(spec.pace, hz, &mut rng);
                    // Arm the next wake before sending, not after: arming a timer that
                    // fires before the driver's next wake-up writes tokio's eventfd, and
                    // after a send that writes its socket at once (fogline's direct
                    // write) that write and the wasted epoll_wait it causes would fall
                    // inside the latency being measured.
                    sleep.as_mut().reset(due);
                    let m = enc.encode_stamped(id, seq, now_ns);
                    p.send(m).await?;
                    p.flush().await?;
                    seq += 1;
                }
            }
        }
        p.close().await
    }
    .await;
    if let Err(e) = result {
        error = Some(format!("producer {id}: {e}"));
    }
    ProdOutcome {
        sent: seq,
        end_ns: now_ns(),
        error,
    }
}

/// Sends one probe through every producer, all at once, and waits until each was handed
/// over (and, when persistent, acknowledged): no producer's first measured message pays for
/// its set-up, such as Kafka's metadata and leader lookup for a new topic, which fell inside
/// the throughput window of producer-only cells and the latency of every producer's first
/// message.
async fn prime(pubs: Vec<Box<dyn Publisher>>) -> Result<Vec<Box<dyn Publisher>>, RunError> {
    let mut set = tokio::task::JoinSet::new();
    let n = pubs.len();
    for mut p in pubs {
        set.spawn(async move {
            let sent = match p.send(probe(u64::MAX)).await {
                Ok(()) => p.flush().await,
                Err(e) => Err(e),
            };
            (p, sent)
        });
    }
    // Producers are alike: their ids follow the order they came back in.
    let mut primed = Vec::with_capacity(n);
    while let Some(done) = set.join_next().await {
        let (p, sent) = done.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        sent?;
        primed.push(p);
    }
    Ok(primed)
}

/// A warm-up probe: a header-only message from [`WARMUP_PRODUCER`], never counted.
fn probe(seq: u64) -> Bytes {
    Encoder::new(payload::HEADER_LEN).encode(Header {
        producer: WARMUP_PRODUCER,
        seq,
        sent_ns: now_ns(),
    })
}

async fn warm_up(
    driver: &dyn Driver,
    first: &mut dyn Publisher,
    shared: &Shared,
) -> Result<(), RunError> {
    let t = tokio::time::Instant::now();
    let mut seq = 0;
    loop {
        let ready = shared
            .ready
            .iter()
            .filter(|r| r.load(Ordering::Acquire))
            .count();
        if ready == shared.ready.len() {
            return Ok(());
        }
        if t.elapsed() > WARMUP_TIMEOUT {
            return Err(RunError::NotReady {
                system: driver.name(),
                ready,
                total: shared.ready.len(),
                secs: WARMUP_TIMEOUT.as_secs(),
            });
        }
        first.send(probe(seq)).await?;
        first.flush().await?;
        seq += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Runs `spec` once against `driver` on a fresh `topic`, sampling `server_pid` if given.
///
/// # Errors
/// When setting up fails (connection, subscription, warm-up). Failures during the measured
/// phase are not errors: they are reported in [`CellResult::errors`] and counted as loss.
pub async fn run_cell(
    driver: Arc<dyn Driver>,
    spec: &CellSpec,
    topic: &str,
    server_pid: Option<u32>,
    repetition: u32,
) -> Result<CellResult, RunError> {
    driver.prepare(topic, payload::wire_size(spec.size)).await?;
    let live = spec.reading == Reading::Live;
    let nsubs = spec.subscribers as usize;
    let shared = Arc::new(Shared {
        ready: (0..nsubs).map(|_| AtomicBool::new(false)).collect(),
        ..Shared::default()
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut subs = Vec::new();
    if live {
        for i in 0..nsubs {
            let s = driver.subscriber(topic).await?;
            subs.push(spawn_subscriber(
                s,
                i,
                shared.clone(),
                stop_rx.clone(),
                true,
            ));
        }
    }
    let mut pubs = Vec::with_capacity(spec.producers as usize);
    for _ in 0..spec.producers {
        pubs.push(driver.publisher(topic).await?);
    }
    if live && nsubs > 0 {
        if let Some(first) = pubs.first_mut() {
            warm_up(driver.as_ref(), first.as_mut(), &shared).await?;
        }
    }
    let pubs = prime(pubs).await?;

    let sampler = server_pid.map(|pid| Sampler::start(pid, Duration::from_millis(100)));
    let watch = Watch::start(server_pid);
    let start = tokio::time::Instant::now();
    let start_ns = now_ns();
    let handles: Vec<_> = pubs
        .into_iter()
        .enumerate()
        .map(|(id, p)| tokio::spawn(produce(p, id as u32, spec.clone(), start)))
        .collect();
    let mut sent_by = Vec::with_capacity(handles.len());
    let mut errors = Vec::new();
    let mut send_end_ns = start_ns;
    for h in handles {
        match h.await {
            Ok(o) => {
                sent_by.push(o.sent);
                send_end_ns = send_end_ns.max(o.end_ns);
                errors.extend(o.error);
            }
            Err(e) => {
                sent_by.push(0);
                errors.push(format!("producer task failed: {e}"));
            }
        }
    }
    let sent: u64 = sent_by.iter().sum();

    let mut read_start_ns = start_ns;
    if !live && nsubs > 0 {
        read_start_ns = now_ns();
        for i in 0..nsubs {
            let s = driver.replayer(topic).await?;
            subs.push(spawn_subscriber(
                s,
                i,
                shared.clone(),
                stop_rx.clone(),
                false,
            ));
        }
    }
    wait_for_stragglers(
        &shared,
        sent * nsubs as u64,
        nsubs as u64,
        spec.straggler_timeout,
    )
    .await;
    let _ = stop_tx.send(true);

    let mut delivery = Delivery::default();
    let mut latency = LatencyRecorder::new();
    let mut last_ns = 0;
    for h in subs {
        match h.await {
            Ok(o) => {
                o.ledger.settle(&sent_by, &mut delivery);
                latency.merge(&o.latency);
                last_ns = last_ns.max(o.last_ns);
                errors.extend(o.error);
            }
            Err(e) => errors.push(format!("subscriber task failed: {e}")),
        }
    }
    let server = sampler.map(Sampler::finish);
    let noise = watch.as_ref().and_then(Watch::finish);
    let send_seconds = (send_end_ns.saturating_sub(start_ns)) as f64 / 1e9;
    let (elapsed_seconds, delivered) = if nsubs == 0 {
        (send_seconds, sent)
    } else {
        (
            last_ns.saturating_sub(read_start_ns) as f64 / 1e9,
            delivery.received,
        )
    };
    let per_s = |n: u64, secs: f64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let throughput_msgs = per_s(delivered, elapsed_seconds);
    let wire = payload::wire_size(spec.size);
    Ok(CellResult {
        system: driver.name().to_string(),
        spec: spec.clone(),
        repetition,
        wire_size: wire,
        sent,
        delivery,
        latency: latency.summary(),
        send_seconds,
        elapsed_seconds,
        publish_rate: per_s(sent, send_seconds),
        throughput_msgs,
        throughput_mbps: throughput_msgs * wire as f64 / 1e6,
        server,
        noise,
        errors,
    })
}

async fn wait_for_stragglers(shared: &Shared, expected: u64, subscribers: u64, idle: Duration) {
    let mut last = shared.arrivals.load(Ordering::Relaxed);
    let mut since = tokio::time::Instant::now();
    loop {
        let now = shared.arrivals.load(Ordering::Relaxed);
        if now >= expected || shared.finished.load(Ordering::Relaxed) >= subscribers {
            return;
        }
        if now != last {
            last = now;
            since = tokio::time::Instant::now();
        } else if since.elapsed() >= idle {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
