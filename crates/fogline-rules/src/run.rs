//! One rule at work: read its stream, run the plan, hand results to the sinks and the
//! triggers, keep time, checkpoint.
//!
//! - qos 0 reads a live subscription to the stream's subjects: what arrives while the
//!   rule is stopped or behind its queue's limit is not seen (at most once).
//! - qos 1 reads the stream through the durable consumer `rule.<id>`. Every
//!   `checkpointInterval` the rule waits until its sinks have delivered every result so
//!   far, then writes a checkpoint: the offset of the next record to read, the plan's
//!   window state and the `once` triggers that fired. After kill -9 it starts from the
//!   checkpoint, so each record is counted into its windows and each window result is
//!   made again if it was not delivered before the checkpoint (at least once: results
//!   made between the checkpoint and the crash come again, and are counted as
//!   `replayed_results`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fogline_broker::link::{Link, LinkConsumer, LinkSubscription};
use fogline_broker::{ConsumerOptions, Start, SubscribeOptions};
use fogline_sql::plan::{Emit, Meta, OperatorStats, Plan};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::sink::Sink;
use crate::store::Store;
use crate::trigger::{Consequence, RuleSet};
use crate::Functions;

/// What a rule reports while it runs (read by the status API and the metrics).
#[derive(Debug, Default)]
pub struct RuleStats {
    /// Records read from the stream.
    pub records_in: AtomicU64,
    /// Results the plan made (a record's row, or a window's rows).
    pub results: AtomicU64,
    /// Records that could not be decoded or evaluated.
    pub exceptions: AtomicU64,
    /// Results made again after a restart from a checkpoint.
    pub replayed_results: AtomicU64,
    /// Checkpoints written.
    pub checkpoints: AtomicU64,
    /// Triggers fired.
    pub triggers_fired: AtomicU64,
    /// Microseconds since the epoch of the last result.
    pub last_result_us: AtomicU64,
    /// The last exception.
    pub last_exception: Mutex<Option<String>>,
    /// The plan's operators, refreshed while it runs.
    pub operators: Mutex<Vec<OperatorStats>>,
    /// The sinks' counters, in action order.
    pub sinks: Mutex<Vec<(String, Arc<crate::sink::SinkStats>)>>,
}

impl RuleStats {
    fn exception(&self, message: String) {
        self.exceptions.fetch_add(1, Ordering::Relaxed);
        *self.last_exception.lock() = Some(message);
    }
}

/// A qos 1 rule's checkpoint.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The next offset to read.
    pub cursor: u64,
    /// The plan's state.
    pub plan: serde_json::Value,
    /// `once` triggers that fired.
    #[serde(default)]
    pub fired: Vec<String>,
    /// Results made up to this checkpoint.
    #[serde(default)]
    pub results: u64,
}

/// Everything a run needs.
pub struct Job {
    /// The rule's id.
    pub id: String,
    /// The stream it reads.
    pub stream: String,
    /// Subjects of the stream (qos 0 subscribes to them).
    pub subjects: Vec<String>,
    /// The stream's `PROFILE`: only records whose data profile it matches (routed by the
    /// broker under qos 0, checked here under qos 1).
    pub interest: Option<fogline_profile::Interest>,
    /// The compiled plan.
    pub plan: Plan,
    /// The sinks, started.
    pub sinks: Vec<Sink>,
    /// Its triggers.
    pub triggers: RuleSet,
    /// The trigger sinks, by trigger index (`None` for function consequences).
    pub trigger_sinks: Vec<Option<Sink>>,
    /// At least once.
    pub qos1: bool,
    /// Between checkpoints.
    pub checkpoint_every: Duration,
    /// Its counters.
    pub stats: Arc<RuleStats>,
    /// The link it reads and publishes through.
    pub link: Link,
    /// Where checkpoints go.
    pub checkpoints: Arc<Store>,
    /// Functions triggers may start and stop.
    pub functions: Option<Arc<dyn Functions>>,
}

/// Records read per fetch under qos 1.
const FETCH: usize = 512;
/// How often the operator counters are copied for the status API.
const STATS_EVERY: Duration = Duration::from_millis(500);

fn now_ms() -> i64 {
    (fogline_broker::now_micros() / 1000) as i64
}

fn until(deadline_ms: Option<i64>) -> Option<Instant> {
    deadline_ms
        .map(|d| Instant::now() + Duration::from_millis(d.saturating_sub(now_ms()).max(0) as u64))
}

enum Source {
    Live(LinkSubscription),
    /// Several subjects: one forwarding task each.
    Merged(
        mpsc::Receiver<Arc<fogline_broker::Batch>>,
        Vec<tokio::task::JoinHandle<()>>,
    ),
    Durable(LinkConsumer),
}

impl Drop for Source {
    fn drop(&mut self) {
        if let Source::Merged(_, tasks) = self {
            tasks.iter().for_each(|t| t.abort());
        }
    }
}

/// A rule ready to run: its checkpoint restored and its source open (so records published
/// once `start` returns are seen).
pub struct Ready {
    job: Job,
    source: Source,
    cursor: u64,
    restored: bool,
}

/// Restores a qos 1 rule's checkpoint and opens its source.
///
/// # Errors
/// The checkpoint cannot be read, or the stream cannot be read or subscribed to.
pub fn prepare(mut job: Job) -> Result<Ready, String> {
    let mut cursor = 0u64;
    let mut restored = false;
    if job.qos1 {
        if let Some(body) = job.checkpoints.get(&job.id).map_err(|e| e.to_string())? {
            let cp: Checkpoint = serde_json::from_slice(&body)
                .map_err(|e| format!("checkpoint of rule {}: {e}", job.id))?;
            job.plan
                .restore(&cp.plan)
                .map_err(|e| format!("checkpoint of rule {}: {e}", job.id))?;
            job.triggers.restore_fired(&cp.fired);
            cursor = cp.cursor;
            restored = true;
            job.stats.results.store(cp.results, Ordering::Relaxed);
        }
    }
    let source = open(&job, cursor, restored)?;
    if job.qos1 && !restored {
        // The first start reads from the stream's end: keep that position now, so a crash
        // before the first periodic checkpoint resumes there, not at a later end.
        if let Source::Durable(c) = &source {
            cursor = c.cursor();
        }
        let cp = Checkpoint {
            cursor,
            plan: job.plan.snapshot(),
            fired: Vec::new(),
            results: 0,
        };
        let body = serde_json::to_vec(&cp).map_err(|e| e.to_string())?;
        job.checkpoints
            .put(&job.id, &body)
            .map_err(|e| format!("rule {}: cannot write its checkpoint: {e}", job.id))?;
    }
    Ok(Ready {
        job,
        source,
        cursor,
        restored,
    })
}

/// Runs the rule until `stop`; an error is a failure the supervisor may restart.
pub async fn run(ready: Ready, stop: watch::Receiver<bool>) -> Result<(), String> {
    let Ready {
        mut job,
        mut source,
        mut cursor,
        restored,
    } = ready;
    let mut stop = stop;
    let mut replaying = restored;
    let mut out: Vec<Emit> = Vec::new();
    let mut next_checkpoint = Instant::now() + job.checkpoint_every;
    let mut next_stats = Instant::now();
    let mut topic: (bytes::Bytes, Arc<str>) = (bytes::Bytes::new(), Arc::from(""));
    loop {
        let tick_at = until(job.plan.next_tick());
        let wake = match (tick_at, job.qos1) {
            (Some(t), true) => Some(t.min(next_checkpoint)),
            (None, true) => Some(next_checkpoint),
            (t, false) => t,
        };
        let sleep = tokio::time::sleep_until(
            wake.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600)),
        );
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            got = read(&mut source, &mut topic, &mut cursor, job.interest.as_ref()) => {
                let records = got?;
                for (row_bytes, meta) in records {
                    job.stats.records_in.fetch_add(1, Ordering::Relaxed);
                    push(&mut job, &row_bytes, &meta, &mut out);
                }
            }
            _ = sleep => {}
        }
        // One clock reading per wake-up (a batch of records), not per record.
        let now = Instant::now();
        if tick_at.is_some_and(|t| t <= now) {
            if let Err(e) = job.plan.tick(now_ms(), &mut out) {
                job.stats.exception(e.to_string());
            }
        }
        dispatch(&mut job, &mut out, replaying).await;
        if job.qos1 && now >= next_checkpoint {
            checkpoint(&mut job, cursor).await?;
            replaying = false;
            next_checkpoint = Instant::now() + job.checkpoint_every;
        }
        if now >= next_stats {
            *job.stats.operators.lock() = job.plan.stats();
            next_stats = now + STATS_EVERY;
        }
    }
    *job.stats.operators.lock() = job.plan.stats();
    if job.qos1 {
        checkpoint(&mut job, cursor).await?;
    }
    drop(source);
    Ok(())
}

fn open(job: &Job, cursor: u64, restored: bool) -> Result<Source, String> {
    if job.qos1 {
        let opts = ConsumerOptions {
            name: Some(format!(
                "{}{}",
                fogline_broker::RULE_CONSUMER_PREFIX,
                job.id
            )),
            filter: None,
            start: if restored {
                Start::Offset(cursor)
            } else {
                Start::Latest
            },
            ack_timeout: None,
            max_inflight: FETCH,
        };
        return job
            .link
            .consumer(&job.stream, opts)
            .map(Source::Durable)
            .map_err(|e| format!("rule {}: cannot read stream {}: {e}", job.id, job.stream));
    }
    let sub = |f: &str| {
        job.link
            .subscribe(
                f,
                SubscribeOptions {
                    interest: job.interest.clone(),
                    ..SubscribeOptions::default()
                },
            )
            .map_err(|e| format!("rule {}: cannot subscribe to {f}: {e}", job.id))
    };
    if let [only] = job.subjects.as_slice() {
        return Ok(Source::Live(sub(only)?));
    }
    let (tx, rx) = mpsc::channel(64);
    let mut tasks = Vec::new();
    for f in &job.subjects {
        let mut s = sub(f)?;
        let tx = tx.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(b) = s.recv_batch().await {
                if tx.send(b).await.is_err() {
                    break;
                }
            }
        }));
    }
    Ok(Source::Merged(rx, tasks))
}

type Records = Vec<(bytes::Bytes, Meta)>;

/// The next records with their meta; an error when the source ended.
async fn read(
    source: &mut Source,
    topic: &mut (bytes::Bytes, Arc<str>),
    cursor: &mut u64,
    interest: Option<&fogline_profile::Interest>,
) -> Result<Records, String> {
    let batch = match source {
        Source::Live(s) => match s.recv_batch().await {
            Some(b) => b,
            None => {
                return Err(format!(
                    "subscription {} ended: {:?}",
                    s.filter(),
                    s.closed()
                ))
            }
        },
        Source::Merged(rx, _) => rx
            .recv()
            .await
            .ok_or_else(|| "subscriptions ended".to_string())?,
        Source::Durable(c) => {
            let got = c
                .fetch(FETCH, Duration::from_secs(3600))
                .await
                .map_err(|e| e.to_string())?;
            let mut v = Vec::with_capacity(got.len());
            for d in got {
                let r = d.record;
                *cursor = r.offset + 1;
                if let Some(i) = interest {
                    let profile = fogline_profile::DataProfile::from_header_block(&r.headers);
                    if !i.matches(&profile, "") {
                        continue;
                    }
                }
                if r.topic != topic.0 {
                    let name = String::from_utf8_lossy(&r.topic);
                    *topic = (r.topic.clone(), Arc::from(name.as_ref()));
                }
                let meta = Meta {
                    topic: topic.1.clone(),
                    timestamp_ms: (r.timestamp / 1000) as i64,
                };
                v.push((r.payload, meta));
            }
            return Ok(v);
        }
    };
    // The topic's name as the plan wants it, made once per run of batches on one topic.
    if topic.1.as_ref() != batch.topic.as_ref() {
        topic.1 = Arc::from(batch.topic.as_ref());
        topic.0 = bytes::Bytes::new();
    }
    let name = topic.1.clone();
    let mut v = Vec::with_capacity(batch.count() as usize);
    let mut records = batch.records.clone();
    while let Some(r) = records.pop_front() {
        let ts = if r.timestamp == 0 {
            batch.timestamp
        } else {
            r.timestamp
        };
        v.push((
            r.payload,
            Meta {
                topic: name.clone(),
                timestamp_ms: (ts / 1000) as i64,
            },
        ));
    }
    Ok(v)
}

fn push(job: &mut Job, payload: &[u8], meta: &Meta, out: &mut Vec<Emit>) {
    match job.plan.decode(payload) {
        Ok(rows) => {
            for row in rows {
                if let Err(e) = job.plan.push(row, meta, out) {
                    job.stats.exception(e.to_string());
                }
            }
        }
        Err(e) => job.stats.exception(e.to_string()),
    }
}

async fn dispatch(job: &mut Job, out: &mut Vec<Emit>, replaying: bool) {
    if out.is_empty() {
        return;
    }
    job.stats
        .last_result_us
        .store(fogline_broker::now_micros(), Ordering::Relaxed);
    for emit in out.drain(..) {
        job.stats.results.fetch_add(1, Ordering::Relaxed);
        if replaying {
            job.stats.replayed_results.fetch_add(1, Ordering::Relaxed);
        }
        if !job.triggers.triggers.is_empty() {
            let meta = Meta {
                topic: Arc::from(""),
                timestamp_ms: now_ms(),
            };
            for row in &emit.rows {
                let Some(i) = job.triggers.fire(row, &meta) else {
                    continue;
                };
                job.stats.triggers_fired.fetch_add(1, Ordering::Relaxed);
                fire(job, i, row).await;
            }
        }
        if let Some((last, rest)) = job.sinks.split_last() {
            for s in rest {
                s.send(emit.rows.clone()).await;
            }
            last.send(emit.rows).await;
        }
    }
}

async fn fire(job: &mut Job, i: usize, row: &fogline_sql::Row) {
    let t = &job.triggers.triggers[i];
    let name = t.spec.name.clone();
    let result = match &t.consequence {
        Consequence::Action(_) => {
            if let Some(Some(sink)) = job.trigger_sinks.get(i) {
                sink.send(vec![row.clone()]).await;
            }
            Ok(())
        }
        Consequence::Start {
            function,
            source,
            output,
        } => match &job.functions {
            Some(f) => f.start(function, source, output).await.map(|_| ()),
            None => Err("this node runs no functions".to_string()),
        },
        Consequence::Stop { function } => match &job.functions {
            Some(f) => f.stop(function).await,
            None => Err("this node runs no functions".to_string()),
        },
    };
    match result {
        Ok(()) => tracing::info!(rule = %job.id, trigger = %name, "trigger fired"),
        Err(e) => job.stats.exception(format!("trigger {name}: {e}")),
    }
}

async fn checkpoint(job: &mut Job, cursor: u64) -> Result<(), String> {
    for s in job.sinks.iter().chain(job.trigger_sinks.iter().flatten()) {
        s.flush().await;
    }
    let cp = Checkpoint {
        cursor,
        plan: job.plan.snapshot(),
        fired: job.triggers.fired_once(),
        results: job.stats.results.load(Ordering::Relaxed),
    };
    let body = serde_json::to_vec(&cp).map_err(|e| e.to_string())?;
    let store = job.checkpoints.clone();
    let id = job.id.clone();
    tokio::task::spawn_blocking(move || store.put(&id, &body))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("rule {}: cannot write its checkpoint: {e}", job.id))?;
    job.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
    Ok(())
}
