//! The rules of a node: create, change, start, stop, delete, status; each running rule
//! supervised (restarted after a failure as its `restartStrategy` says).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fogline_broker::link::Link;
use fogline_broker::Broker;
use fogline_sql::ast::{Statement, StreamDef, StreamOptions};
use fogline_sql::plan::{Extensions, Plan, PlanOptions};
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::patterns::Patterns;
use crate::run::{self, Job, RuleStats};
use crate::sink::{Sink, SinkConfig};
use crate::spec::RuleSpec;
use crate::store::Store;
use crate::trigger::{Consequence, RuleSet};
use crate::Functions;

/// Why a request about rules was refused.
#[derive(Debug, thiserror::Error)]
pub enum RuleError {
    /// No rule has that id.
    #[error("no rule {0:?}")]
    Unknown(String),
    /// A rule has that id already.
    #[error("rule {0:?} exists")]
    Exists(String),
    /// The rule is not valid: its SQL, stream, actions or options.
    #[error("{0}")]
    Invalid(String),
    /// Its files could not be written.
    #[error("{0}")]
    Storage(String),
    /// The node holds as many rules as `[rules] max_rules` allows.
    #[error("this node holds its most rules, {0} ([rules] max_rules)")]
    TooMany(usize),
}

/// A rule's state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Reading and producing.
    Running,
    /// Stopped by a user (or created stopped).
    Stopped,
    /// Waiting to restart after a failure.
    Restarting,
    /// Failed and not restarted.
    Failed,
}

struct Entry {
    spec: RuleSpec,
    state: Arc<Mutex<(State, Option<String>, u32)>>,
    stats: Arc<RuleStats>,
    started_us: u64,
    run: Option<(watch::Sender<bool>, JoinHandle<()>)>,
}

/// A rule's status.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    /// Its id.
    pub id: String,
    /// Its state.
    pub state: State,
    /// Why it failed (or last failed).
    pub reason: Option<String>,
    /// Restarts after failures.
    pub restarts: u32,
    /// When it last started, microseconds since the epoch.
    pub started_us: u64,
}

pub(crate) struct Ext(pub Arc<Patterns>);

impl Extensions for Ext {
    fn pattern_set(&self, name: &str) -> Option<Arc<fogline_match::Matcher>> {
        self.0.matcher(name)
    }
}

/// What a node's rules may hold (`[rules] max_rules`, `max_window_rows`).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Most rules.
    pub max_rules: usize,
    /// Most records one window of a rule holds (see `PlanOptions::max_window_rows`).
    pub max_window_rows: usize,
}

impl From<usize> for Limits {
    /// `max_rules`, with the default window bound.
    fn from(max_rules: usize) -> Limits {
        Limits {
            max_rules,
            max_window_rows: fogline_sql::plan::DEFAULT_MAX_WINDOW_ROWS,
        }
    }
}

/// Every rule of a node.
#[derive(Clone)]
pub struct Rules {
    inner: Arc<Inner>,
}

struct Inner {
    broker: Broker,
    link: Link,
    specs: Store,
    checkpoints: Arc<Store>,
    patterns: Arc<Patterns>,
    functions: Option<Arc<dyn Functions>>,
    rules: Mutex<BTreeMap<String, Entry>>,
    max_rules: usize,
    max_window_rows: usize,
}

impl Rules {
    /// Opens the rules kept under `dir` (`None`: in memory) and starts those that ran.
    ///
    /// # Errors
    /// The directory cannot be read. A stored rule that no longer compiles (its stream
    /// was deleted) is kept, marked failed, not an error.
    pub fn open(
        broker: Broker,
        dir: Option<std::path::PathBuf>,
        functions: Option<Arc<dyn Functions>>,
        limits: impl Into<Limits>,
    ) -> Result<Rules, String> {
        let Limits {
            max_rules,
            max_window_rows,
        } = limits.into();
        let sub = |name: &str| {
            Store::open(dir.as_ref().map(|d| d.join(name)))
                .map_err(|e| format!("cannot open the rules' {name} store: {e}"))
        };
        let specs = sub("rules")?;
        let rules = Rules {
            inner: Arc::new(Inner {
                link: broker.link("rules"),
                broker,
                checkpoints: Arc::new(sub("checkpoints")?),
                patterns: Arc::new(Patterns::open(sub("patterns")?)?),
                functions,
                rules: Mutex::new(BTreeMap::new()),
                max_rules,
                max_window_rows,
                specs,
            }),
        };
        for (id, body) in rules.inner.specs.all().map_err(|e| e.to_string())? {
            let spec = match RuleSpec::from_json(&body) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(rule = %id, "stored rule cannot be read: {e}");
                    continue;
                }
            };
            let run = spec.triggered;
            rules.insert(spec);
            if run {
                if let Err(e) = rules.start(&id) {
                    tracing::error!(rule = %id, "cannot start: {e}");
                }
            }
        }
        Ok(rules)
    }

    /// The pattern sets.
    pub fn patterns(&self) -> &Arc<Patterns> {
        &self.inner.patterns
    }

    /// The broker.
    pub fn broker(&self) -> &Broker {
        &self.inner.broker
    }

    fn insert(&self, spec: RuleSpec) {
        let entry = Entry {
            state: Arc::new(Mutex::new((State::Stopped, None, 0))),
            stats: Arc::new(RuleStats::default()),
            started_us: 0,
            run: None,
            spec: spec.clone(),
        };
        self.inner.rules.lock().insert(spec.id, entry);
    }

    /// Checks a rule without creating it.
    ///
    /// # Errors
    /// What is wrong with it.
    pub fn validate(&self, spec: &RuleSpec) -> Result<(), RuleError> {
        spec.check().map_err(RuleError::Invalid)?;
        self.compile(spec).map(drop).map_err(RuleError::Invalid)
    }

    /// Creates a rule (and starts it unless `triggered` is false).
    ///
    /// # Errors
    /// An invalid rule, a taken id, or the disk refused it.
    pub fn create(&self, spec: RuleSpec) -> Result<(), RuleError> {
        self.validate(&spec)?;
        {
            let rules = self.inner.rules.lock();
            if rules.contains_key(&spec.id) {
                return Err(RuleError::Exists(spec.id));
            }
            if rules.len() >= self.inner.max_rules {
                return Err(RuleError::TooMany(self.inner.max_rules));
            }
        }
        self.persist(&spec)?;
        let (id, run) = (spec.id.clone(), spec.triggered);
        self.insert(spec);
        if run {
            self.start(&id)?;
        }
        Ok(())
    }

    /// Replaces a rule and restarts it if it ran. Its checkpoint is dropped (the new SQL may
    /// keep different state).
    ///
    /// # Errors
    /// As [`Rules::create`], and an unknown id.
    pub async fn update(&self, mut spec: RuleSpec) -> Result<(), RuleError> {
        self.validate(&spec)?;
        let was_running = {
            let rules = self.inner.rules.lock();
            let e = rules
                .get(&spec.id)
                .ok_or_else(|| RuleError::Unknown(spec.id.clone()))?;
            e.run.is_some()
        };
        self.halt(&spec.id).await;
        spec.triggered = was_running || spec.triggered;
        self.persist(&spec)?;
        let _ = self.inner.checkpoints.delete(&spec.id);
        let id = spec.id.clone();
        if let Some(e) = self.inner.rules.lock().get_mut(&id) {
            e.spec = spec.clone();
        }
        if spec.triggered {
            self.start(&id)?;
        }
        Ok(())
    }

    /// Deletes a rule, its checkpoint and its durable consumer.
    ///
    /// # Errors
    /// An unknown id, or the disk refused it.
    pub async fn delete(&self, id: &str) -> Result<(), RuleError> {
        if !self.inner.rules.lock().contains_key(id) {
            return Err(RuleError::Unknown(id.to_string()));
        }
        self.halt(id).await;
        let spec = self.inner.rules.lock().remove(id).map(|e| e.spec);
        self.inner
            .specs
            .delete(id)
            .map_err(|e| RuleError::Storage(e.to_string()))?;
        let _ = self.inner.checkpoints.delete(id);
        if let Some(stream) = spec.and_then(|s| from_stream(&s.sql)) {
            let _ = self
                .inner
                .broker
                .delete_consumer(&stream, &format!("rule.{id}"));
        }
        Ok(())
    }

    /// A rule as written.
    pub fn get(&self, id: &str) -> Option<RuleSpec> {
        self.inner.rules.lock().get(id).map(|e| e.spec.clone())
    }

    /// Every rule's status.
    pub fn list(&self) -> Vec<Status> {
        self.inner
            .rules
            .lock()
            .iter()
            .map(|(id, e)| status_of(id, e))
            .collect()
    }

    /// A rule's status and counters.
    pub fn status(&self, id: &str) -> Option<(Status, Arc<RuleStats>)> {
        let rules = self.inner.rules.lock();
        let e = rules.get(id)?;
        Some((status_of(id, e), e.stats.clone()))
    }

    /// Starts a stopped rule (no-op when it runs).
    ///
    /// # Errors
    /// An unknown id, or it does not compile (its stream is gone).
    pub fn start(&self, id: &str) -> Result<(), RuleError> {
        let spec = {
            let rules = self.inner.rules.lock();
            let e = rules
                .get(id)
                .ok_or_else(|| RuleError::Unknown(id.to_string()))?;
            if e.run.is_some() {
                return Ok(());
            }
            e.spec.clone()
        };
        // Compile and open its source now: a rule that cannot run says why at once, and one
        // that can sees every record published once this returns.
        let stats = Arc::new(RuleStats::default());
        let (stop_tx, stop) = watch::channel(false);
        let ready = self
            .compile(&spec)
            .and_then(|c| run::prepare(self.job(&spec, c, stats.clone(), stop.clone())));
        let ready = match ready {
            Ok(r) => r,
            Err(e) => {
                let _ = stop_tx.send(true);
                if let Some(entry) = self.inner.rules.lock().get_mut(id) {
                    *entry.state.lock() = (State::Failed, Some(e.clone()), 0);
                }
                return Err(RuleError::Invalid(e));
            }
        };
        let mut rules = self.inner.rules.lock();
        let e = rules
            .get_mut(id)
            .ok_or_else(|| RuleError::Unknown(id.to_string()))?;
        e.stats = stats;
        *e.state.lock() = (State::Running, None, 0);
        e.started_us = fogline_broker::now_micros();
        let task = tokio::spawn(supervise(
            self.clone(),
            spec.clone(),
            e.stats.clone(),
            e.state.clone(),
            ready,
            stop,
        ));
        e.run = Some((stop_tx, task));
        drop(rules);
        if !spec.triggered {
            self.set_triggered(id, true)?;
        }
        Ok(())
    }

    /// Stops a rule; it stays stopped across restarts of the node.
    ///
    /// # Errors
    /// An unknown id, or the disk refused it.
    pub async fn stop(&self, id: &str) -> Result<(), RuleError> {
        if !self.inner.rules.lock().contains_key(id) {
            return Err(RuleError::Unknown(id.to_string()));
        }
        self.halt(id).await;
        self.set_triggered(id, false)
    }

    /// Stops every rule (the node is stopping), waiting for each to write its checkpoint.
    pub async fn shut_down(&self) {
        let runs: Vec<_> = self
            .inner
            .rules
            .lock()
            .values_mut()
            .filter_map(|e| e.run.take())
            .collect();
        for (stop, _) in &runs {
            let _ = stop.send(true);
        }
        for (_, task) in runs {
            let _ = task.await;
        }
    }

    /// Stops a rule's task and waits until it has ended (and checkpointed), so its
    /// durable consumer is free for the next start.
    async fn halt(&self, id: &str) {
        let run = self.inner.rules.lock().get_mut(id).and_then(|e| {
            *e.state.lock() = (State::Stopped, None, 0);
            e.run.take()
        });
        if let Some((stop, task)) = run {
            let _ = stop.send(true);
            let _ = task.await;
        }
    }

    fn set_triggered(&self, id: &str, on: bool) -> Result<(), RuleError> {
        let spec = {
            let mut rules = self.inner.rules.lock();
            let Some(e) = rules.get_mut(id) else {
                return Ok(());
            };
            e.spec.triggered = on;
            e.spec.clone()
        };
        self.persist(&spec)
    }

    fn persist(&self, spec: &RuleSpec) -> Result<(), RuleError> {
        let body =
            serde_json::to_vec_pretty(spec).map_err(|e| RuleError::Storage(e.to_string()))?;
        self.inner
            .specs
            .put(&spec.id, &body)
            .map_err(|e| RuleError::Storage(format!("cannot store rule {}: {e}", spec.id)))
    }

    /// Compiles a rule into a job (sinks not yet started).
    fn compile(&self, spec: &RuleSpec) -> Result<Compiled, String> {
        let select = match fogline_sql::parse(&spec.sql).map_err(|e| e.to_string())? {
            Statement::Select(s) => s,
            Statement::CreateStream(_) => {
                return Err("a rule's sql must be a SELECT (CREATE STREAM makes a stream)".into())
            }
        };
        let stream = self.inner.broker.stream(&select.from).ok_or_else(|| {
            format!(
                "unknown stream {:?}: create it first (CREATE STREAM)",
                select.from
            )
        })?;
        let def = stream_def(&stream.config())?;
        let ext: Arc<dyn Extensions> = Arc::new(Ext(self.inner.patterns.clone()));
        let opts = PlanOptions {
            is_event_time: spec.options.is_event_time,
            late_tolerance_ms: spec.options.late_tolerance,
            max_window_rows: self.inner.max_window_rows,
        };
        let plan = Plan::new(&select, &def, opts, ext.clone()).map_err(|e| e.to_string())?;
        let sinks = spec
            .actions
            .iter()
            .map(SinkConfig::parse)
            .collect::<Result<Vec<_>, _>>()?;
        let triggers = RuleSet::compile(&spec.triggers, ext)?;
        let interest = stream_interest(&def)?;
        Ok(Compiled {
            stream: select.from.clone(),
            subjects: stream.subjects().to_vec(),
            interest,
            plan,
            sinks,
            triggers,
        })
    }
}

struct Compiled {
    stream: String,
    subjects: Vec<String>,
    interest: Option<fogline_profile::Interest>,
    plan: Plan,
    sinks: Vec<SinkConfig>,
    triggers: RuleSet,
}

fn status_of(id: &str, e: &Entry) -> Status {
    let (state, reason, restarts) = e.state.lock().clone();
    Status {
        id: id.to_string(),
        state,
        reason,
        restarts,
        started_us: e.started_us,
    }
}

/// The SQL definition of a stream: its `CREATE STREAM`, else schemaless JSON on its
/// subjects.
pub fn stream_def(cfg: &fogline_broker::StreamConfig) -> Result<StreamDef, String> {
    match &cfg.sql {
        Some(sql) => match fogline_sql::parse(sql) {
            Ok(Statement::CreateStream(mut def)) => {
                def.name = cfg.name.clone();
                Ok(def)
            }
            Ok(_) => Err(format!(
                "stream {}: its sql is not a CREATE STREAM",
                cfg.name
            )),
            Err(e) => Err(format!("stream {}: {e}", cfg.name)),
        },
        None => Ok(StreamDef {
            name: cfg.name.clone(),
            fields: Vec::new(),
            options: StreamOptions {
                datasource: cfg.subjects.first().cloned(),
                ..StreamOptions::default()
            },
        }),
    }
}

/// The stream's `PROFILE` option: an interest profile (docs/PROFILES.md, terms only) its
/// rules read by, so they see only the records whose data profile it matches.
fn stream_interest(def: &StreamDef) -> Result<Option<fogline_profile::Interest>, String> {
    let Some((_, text)) = def.options.raw.iter().find(|(k, _)| k == "PROFILE") else {
        return Ok(None);
    };
    let interest = fogline_profile::Interest::parse_terms(text)
        .map_err(|e| format!("stream {}: PROFILE: {e}", def.name))?;
    Ok((!interest.terms.is_empty()).then_some(interest))
}

/// The stream a rule's SQL reads, if it parses.
pub(crate) fn from_stream(sql: &str) -> Option<String> {
    match fogline_sql::parse(sql).ok()? {
        Statement::Select(s) => Some(s.from),
        Statement::CreateStream(_) => None,
    }
}

type StateCell = Arc<Mutex<(State, Option<String>, u32)>>;

/// Runs a rule; after a failure, restarts it as its strategy says.
async fn supervise(
    rules: Rules,
    spec: RuleSpec,
    stats: Arc<RuleStats>,
    state: StateCell,
    first: run::Ready,
    mut stop: watch::Receiver<bool>,
) {
    let strategy = &spec.options.restart_strategy;
    let mut restarts = 0u32;
    let mut ready = Some(first);
    loop {
        let prepared = match ready.take() {
            Some(r) => Ok(r),
            None => rules
                .compile(&spec)
                .and_then(|c| run::prepare(rules.job(&spec, c, stats.clone(), stop.clone()))),
        };
        let result = match prepared {
            Ok(r) => run::run(r, stop.clone()).await,
            Err(e) => Err(e),
        };
        if *stop.borrow() {
            return;
        }
        let reason = match result {
            Ok(()) => "ended".to_string(),
            Err(e) => e,
        };
        tracing::warn!(rule = %spec.id, "rule failed: {reason}");
        if restarts >= strategy.attempts {
            *state.lock() = (State::Failed, Some(reason), restarts);
            return;
        }
        restarts += 1;
        *state.lock() = (State::Restarting, Some(reason), restarts);
        let delay = Duration::from_millis(strategy.delay_ms(restarts));
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let mut s = state.lock();
        s.0 = State::Running;
    }
}

impl Rules {
    fn job(
        &self,
        spec: &RuleSpec,
        c: Compiled,
        stats: Arc<RuleStats>,
        stop: watch::Receiver<bool>,
    ) -> Job {
        let qos1 = spec.options.qos > 0;
        let start = |cfg: &SinkConfig| {
            Sink::start(
                cfg.clone(),
                &spec.id,
                self.inner.link.clone(),
                qos1,
                stop.clone(),
            )
        };
        let sinks: Vec<Sink> = c.sinks.iter().map(start).collect();
        *stats.sinks.lock() = sinks
            .iter()
            .map(|s| (s.config.kind.clone(), s.stats.clone()))
            .collect();
        let trigger_sinks = c
            .triggers
            .triggers
            .iter()
            .map(|t| match &t.consequence {
                Consequence::Action(cfg) => Some(start(cfg)),
                _ => None,
            })
            .collect();
        Job {
            id: spec.id.clone(),
            stream: c.stream,
            subjects: c.subjects,
            interest: c.interest,
            plan: c.plan,
            sinks,
            triggers: c.triggers,
            trigger_sinks,
            qos1,
            checkpoint_every: Duration::from_millis(spec.options.checkpoint_interval.max(1)),
            stats,
            link: self.inner.link.clone(),
            checkpoints: self.inner.checkpoints.clone(),
            functions: self.inner.functions.clone(),
        }
    }
}
