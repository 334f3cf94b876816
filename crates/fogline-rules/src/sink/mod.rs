//! Actions (sinks): where a rule's results go. Each is `{"<kind>": {properties}}` in the
//! rule's `actions`:
//!
//! - `publish` (and `mqtt`, its eKuiper name: both publish on this node's broker; `server`
//!   is ignored): `topic`, a template that may use result fields (`alerts/{id}`, or
//!   eKuiper's `alerts/{{.id}}`); `priority`.
//! - `log`: each result as an INFO line. `nop`: nothing (benchmarks).
//! - `rest`: an HTTP POST (or `method`) of the JSON to `url`, `headers`, `timeout` in
//!   milliseconds; an `https://` url takes `rootCaPath` (required), `certificationPath` and
//!   `privateKeyPath`.
//!
//! Common properties (eKuiper's names): `sendSingle` (each row its own message; default
//! false: a result's rows as one JSON array), `omitIfEmpty`, `bufferLength` (results
//! waiting for the sink, default 1024), `retryInterval` (ms, default 1000) and
//! `retryCount` (default 3).
//!
//! A sink runs as its own task behind a bounded queue, so a slow sink never stalls the
//! others. Under qos 0 a full queue drops the new result and counts it, and a result that
//! fails `retryCount` more times is dropped and counted. Under qos 1 the rule waits for
//! room, a failing result is retried until it goes through or the rule stops, and a
//! checkpoint waits until every sink has delivered what came before it: the log, not
//! memory, holds what a stalled sink has not taken.

mod http;
mod rest;
mod template;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use fogline_broker::link::{Link, PublishOptions};
use fogline_sql::{Row, Value};
use parking_lot::Mutex;
use serde_json::{Map, Value as Json};
use tokio::sync::{mpsc, oneshot, watch};

pub use http::{request, Connection, HttpError, Response, Url};
use rest::Rest;
use template::Template;

/// A sink's settings, read from a rule's action.
#[derive(Clone, Debug)]
pub struct SinkConfig {
    /// The kind as written (`publish`, `mqtt`, `log`, `nop`, `rest`).
    pub kind: String,
    target: Target,
    send_single: bool,
    omit_if_empty: bool,
    buffer_length: usize,
    retry_interval: Duration,
    retry_count: u32,
}

#[derive(Clone, Debug)]
enum Target {
    Publish { topic: Template, priority: bool },
    Log,
    Nop,
    Rest(Rest),
}

impl SinkConfig {
    /// Reads one action.
    ///
    /// # Errors
    /// An unknown kind or property, or a bad value, named.
    pub fn parse(action: &Map<String, Json>) -> Result<SinkConfig, String> {
        let (kind, props) = action
            .iter()
            .next()
            .ok_or_else(|| "an action needs a sink kind".to_string())?;
        let empty = Map::new();
        let props = match props {
            Json::Object(m) => m,
            Json::Null => &empty,
            _ => return Err(format!("action {kind}: properties must be an object")),
        };
        let mut p = Props { kind, props };
        let target = match kind.as_str() {
            "publish" | "mqtt" => Target::Publish {
                topic: Template::parse(
                    &p.string("topic")?
                        .ok_or_else(|| format!("action {kind}: a topic is required"))?,
                )?,
                priority: p.bool("priority")?.unwrap_or(false),
            },
            "log" => Target::Log,
            "nop" => Target::Nop,
            "rest" => Target::Rest(Rest::parse(&mut p)?),
            other => {
                return Err(format!(
                    "unknown sink {other:?}: this node has publish (mqtt), log, nop and rest"
                ))
            }
        };
        let cfg = SinkConfig {
            kind: kind.clone(),
            target,
            send_single: p.bool("sendSingle")?.unwrap_or(false),
            omit_if_empty: p.bool("omitIfEmpty")?.unwrap_or(false),
            buffer_length: p.uint("bufferLength")?.unwrap_or(1024).clamp(1, 1 << 20) as usize,
            retry_interval: Duration::from_millis(p.uint("retryInterval")?.unwrap_or(1000)),
            retry_count: p.uint("retryCount")?.unwrap_or(3).min(u64::from(u32::MAX)) as u32,
        };
        p.finish()?;
        Ok(cfg)
    }
}

/// Reads properties and remembers which were read, so unknown ones can be refused.
pub(crate) struct Props<'a> {
    kind: &'a str,
    props: &'a Map<String, Json>,
}

impl Props<'_> {
    pub(crate) fn string(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.props.get(key) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(format!(
                "action {}: {key} must be a string, not {v}",
                self.kind
            )),
        }
    }

    pub(crate) fn bool(&mut self, key: &str) -> Result<Option<bool>, String> {
        match self.props.get(key) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::Bool(b)) => Ok(Some(*b)),
            Some(Json::String(s)) if s == "true" || s == "false" => Ok(Some(s == "true")),
            Some(v) => Err(format!(
                "action {}: {key} must be true or false, not {v}",
                self.kind
            )),
        }
    }

    pub(crate) fn uint(&mut self, key: &str) -> Result<Option<u64>, String> {
        match self.props.get(key) {
            None | Some(Json::Null) => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                format!(
                    "action {}: {key} must be a whole number, not {v}",
                    self.kind
                )
            }),
        }
    }

    pub(crate) fn object(&mut self, key: &str) -> Result<Option<Map<String, Json>>, String> {
        match self.props.get(key) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::Object(m)) => Ok(Some(m.clone())),
            Some(v) => Err(format!(
                "action {}: {key} must be an object, not {v}",
                self.kind
            )),
        }
    }

    fn finish(self) -> Result<(), String> {
        const KNOWN: &[&str] = &[
            "topic",
            "priority",
            "sendSingle",
            "omitIfEmpty",
            "bufferLength",
            "retryInterval",
            "retryCount",
            "url",
            "method",
            "headers",
            "timeout",
            "bodyType",
            "rootCaPath",
            "certificationPath",
            "privateKeyPath",
            "server",
            "qos",
            "retained",
            "clientId",
            "protocolVersion",
            "log",
            "enableCache",
            "format",
        ];
        match self.props.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            Some(k) => Err(format!("action {}: unknown property {k:?}", self.kind)),
            None => Ok(()),
        }
    }
}

/// What a sink has done.
#[derive(Debug, Default)]
pub struct SinkStats {
    /// Results handed to it.
    pub records_in: AtomicU64,
    /// Messages it delivered.
    pub records_out: AtomicU64,
    /// Failed attempts.
    pub exceptions: AtomicU64,
    /// Results dropped: its queue was full, or retries ran out (qos 0 only).
    pub dropped: AtomicU64,
    /// Nanoseconds spent delivering.
    pub process_ns: AtomicU64,
    /// Microseconds since the epoch of the last delivery.
    pub last_output_us: AtomicU64,
    /// The last failure.
    pub last_exception: Mutex<Option<String>>,
}

enum Job {
    Rows(Vec<Row>),
    Flush(oneshot::Sender<()>),
}

/// A running sink: a queue and the task that empties it.
pub struct Sink {
    /// Its settings.
    pub config: SinkConfig,
    /// Its counters.
    pub stats: Arc<SinkStats>,
    tx: mpsc::Sender<Job>,
    at_least_once: bool,
}

impl Sink {
    /// Starts a sink for rule `rule`; it ends when `stop` turns true or the sink is dropped.
    pub fn start(
        config: SinkConfig,
        rule: &str,
        link: Link,
        at_least_once: bool,
        stop: watch::Receiver<bool>,
    ) -> Sink {
        let (tx, rx) = mpsc::channel(config.buffer_length);
        let stats = Arc::new(SinkStats::default());
        let worker = Worker {
            config: config.clone(),
            rule: rule.to_string(),
            link,
            stats: stats.clone(),
            at_least_once,
            stop,
            rest: None,
            attempts: 0,
        };
        tokio::spawn(worker.run(rx));
        Sink {
            config,
            stats,
            tx,
            at_least_once,
        }
    }

    /// Hands over one result. Under qos 1 waits for room; under qos 0 a full queue drops it.
    pub async fn send(&self, rows: Vec<Row>) {
        self.stats.records_in.fetch_add(1, Ordering::Relaxed);
        if self.at_least_once {
            let _ = self.tx.send(Job::Rows(rows)).await;
        } else if self.tx.try_send(Job::Rows(rows)).is_err() {
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Waits until everything handed over before has been delivered (or dropped); false
    /// when the sink stopped first.
    pub async fn flush(&self) -> bool {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Job::Flush(tx)).await.is_err() {
            return false;
        }
        rx.await.is_ok()
    }
}

struct Worker {
    config: SinkConfig,
    rule: String,
    link: Link,
    stats: Arc<SinkStats>,
    at_least_once: bool,
    stop: watch::Receiver<bool>,
    rest: Option<rest::Client>,
    attempts: u32,
}

/// One delivery attempt in this many is timed (see `Worker::deliver`).
const TIMED_EVERY: u32 = 16;

impl Worker {
    async fn run(mut self, mut rx: mpsc::Receiver<Job>) {
        while let Some(job) = rx.recv().await {
            match job {
                Job::Flush(done) => {
                    let _ = done.send(());
                }
                Job::Rows(rows) => {
                    for (topic_row, payload) in self.encode(rows) {
                        if !self.deliver(topic_row.as_ref(), payload).await {
                            return;
                        }
                    }
                }
            }
        }
    }

    /// The messages for one result, each with the row its topic is rendered from.
    fn encode(&self, rows: Vec<Row>) -> Vec<(Option<Row>, Bytes)> {
        let single = self.config.send_single
            || matches!(&self.config.target, Target::Publish { topic, .. } if !topic.is_fixed());
        if single {
            rows.into_iter()
                .filter(|r| !(self.config.omit_if_empty && r.is_empty()))
                .map(|r| {
                    let row = Value::Object(r);
                    let body = Bytes::from(row.to_json().to_string());
                    let Value::Object(r) = row else {
                        unreachable!("built as an object")
                    };
                    (Some(r), body)
                })
                .collect()
        } else if self.config.omit_if_empty && rows.is_empty() {
            Vec::new()
        } else {
            let first = rows.first().cloned();
            let body: Json = rows
                .into_iter()
                .map(|r| Value::Object(r).to_json())
                .collect();
            vec![(first, Bytes::from(body.to_string()))]
        }
    }

    /// Delivers one message with retries; false when the sink must end (stopped).
    async fn deliver(&mut self, row: Option<&Row>, payload: Bytes) -> bool {
        let mut failures = 0u32;
        loop {
            // One attempt in TIMED_EVERY is timed and counts for that many: the clock
            // around every message was a visible part of a fast sink's cost.
            self.attempts = self.attempts.wrapping_add(1);
            let started = (self.attempts % TIMED_EVERY == 1).then(std::time::Instant::now);
            let result = self.attempt(row, &payload).await;
            if let Some(t) = started {
                let ns = t.elapsed().as_nanos() as u64 * u64::from(TIMED_EVERY);
                self.stats.process_ns.fetch_add(ns, Ordering::Relaxed);
            }
            match result {
                Ok(()) => {
                    self.stats.records_out.fetch_add(1, Ordering::Relaxed);
                    self.stats
                        .last_output_us
                        .store(fogline_broker::now_micros(), Ordering::Relaxed);
                    return true;
                }
                Err(Failure { message, retry }) => {
                    self.stats.exceptions.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(rule = %self.rule, sink = %self.config.kind, "{message}");
                    *self.stats.last_exception.lock() = Some(message);
                    failures += 1;
                    let give_up =
                        !retry || (!self.at_least_once && failures > self.config.retry_count);
                    if give_up {
                        self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                        return true;
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(self.config.retry_interval) => {}
                        _ = self.stop.wait_for(|s| *s) => return false,
                    }
                }
            }
        }
    }

    async fn attempt(&mut self, row: Option<&Row>, payload: &Bytes) -> Result<(), Failure> {
        match &self.config.target {
            Target::Nop => Ok(()),
            Target::Log => {
                tracing::info!(rule = %self.rule, "{}", String::from_utf8_lossy(payload));
                Ok(())
            }
            Target::Publish { topic, priority } => {
                let topic = topic.render(row).map_err(Failure::dropped)?;
                let opts = PublishOptions {
                    acked: self.at_least_once,
                    priority: *priority,
                };
                let block = fogline_wire::RecordBlock::single(0, &[], payload)
                    .map_err(|e| Failure::dropped(format!("result too large: {e}")))?;
                self.link
                    .publish_block(&topic, block, opts)
                    .await
                    .map_err(|e| match e {
                        fogline_broker::BrokerError::InvalidTopic(m)
                        | fogline_broker::BrokerError::Invalid(m) => Failure::dropped(m),
                        other => Failure::retry(other.to_string()),
                    })
            }
            Target::Rest(rest) => {
                let client = self
                    .rest
                    .get_or_insert_with(|| rest::Client::new(rest.clone()));
                client.post(payload.clone()).await
            }
        }
    }
}

/// A failed delivery: whether trying again can help.
pub(crate) struct Failure {
    message: String,
    retry: bool,
}

impl Failure {
    pub(crate) fn retry(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            retry: true,
        }
    }

    pub(crate) fn dropped(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            retry: false,
        }
    }
}
