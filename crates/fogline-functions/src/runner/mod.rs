//! Running stored functions on live topics: R-Pulsar's `start_function` and
//! `stop_function`.
//!
//! Each instance has a link of its own (listed among the node's connections as
//! `function/<name>/<id>`), subscribes to its source filter with no-local (so an output
//! topic that its source also matches does not feed the instance its own results) and
//! publishes each result, fire-and-forget, to its output topic. It runs until
//! [`Runner::stop`], a forced delete of its function, the node's stop signal, or a failure.

mod lines;
mod process;
mod wasm;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use fogline_broker::link::Link;
use fogline_broker::{now_micros, Broker, BrokerError, SubscribeOptions};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::error::FunctionError;
use crate::spec::FunctionKind;
use crate::store::FunctionStore;

/// Ended instances kept in [`Runner::list`] for inspection; older ones are forgotten.
const KEEP_ENDED: usize = 64;

/// An instance's id, unique within its [`Runner`].
pub type InstanceId = u64;

/// Plain counters, updated by the instance, readable at any time (for a metrics registry).
#[derive(Debug, Default)]
pub struct Counters {
    /// Records received from the source.
    pub records_in: AtomicU64,
    /// Results published to the output topic.
    pub records_out: AtomicU64,
    /// Records that failed (trap, fuel, memory, refused framing, a failed publish) and
    /// output lines that were too long.
    pub failures: AtomicU64,
    /// Times a process was restarted after exiting on its own.
    pub restarts: AtomicU64,
    /// Records the broker dropped from the instance's subscription queue (`drop-oldest`).
    pub dropped: AtomicU64,
}

/// Where an instance is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstanceState {
    /// Processing records.
    Running,
    /// Stopped on request (stop, forced delete, node shutdown).
    Stopped,
    /// Ended by itself.
    Failed {
        /// Why.
        reason: String,
    },
}

/// A snapshot of one instance.
#[derive(Clone, Debug)]
pub struct InstanceInfo {
    /// Its id.
    pub id: InstanceId,
    /// The function it runs.
    pub function: String,
    /// `wasm` or `process`.
    pub kind: &'static str,
    /// The topic filter it reads.
    pub source: String,
    /// The topic it publishes to.
    pub output: String,
    /// Its state.
    pub state: InstanceState,
    /// When it started, microseconds since the UNIX epoch.
    pub started_at: u64,
    /// Records received.
    pub records_in: u64,
    /// Results published.
    pub records_out: u64,
    /// Failures (see [`Counters::failures`]).
    pub failures: u64,
    /// Process restarts.
    pub restarts: u64,
    /// Records dropped by the broker's queue.
    pub dropped: u64,
    /// The last failure's message.
    pub last_failure: Option<String>,
    /// The running child's pid (process functions).
    pub pid: Option<u32>,
}

/// What an instance and its [`Runner`] entry share.
#[derive(Default)]
pub(crate) struct Status {
    counters: Arc<Counters>,
    state: Mutex<Option<InstanceState>>,
    last_failure: Mutex<Option<String>>,
    /// 0 while no child runs.
    pid: AtomicU32,
}

impl Status {
    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    pub(crate) fn fail_record(&self, function: &str, why: String) {
        self.counters.failures.fetch_add(1, Relaxed);
        tracing::debug!(function, error = %why, "function: record failed");
        *self.last_failure.lock() = Some(why);
    }

    pub(crate) fn set_pid(&self, pid: Option<u32>) {
        self.pid.store(pid.unwrap_or(0), Relaxed);
    }
}

/// Publishes an instance's results; shared by its tasks.
#[derive(Clone)]
pub(crate) struct Publisher {
    pub(crate) function: String,
    link: Link,
    output: String,
    pub(crate) status: Arc<Status>,
}

impl Publisher {
    /// Publishes one result; a broker error counts as a failure.
    pub(crate) async fn publish(&self, headers: &[u8], payload: &[u8]) {
        let block = match fogline_wire::RecordBlock::single(0, headers, payload) {
            Ok(b) => b,
            Err(e) => {
                return self
                    .status
                    .fail_record(&self.function, format!("output: {e}"))
            }
        };
        let opts = fogline_broker::link::PublishOptions::default();
        match self.link.publish_block(&self.output, block, opts).await {
            Ok(()) => _ = self.status.counters.records_out.fetch_add(1, Relaxed),
            Err(e) => self
                .status
                .fail_record(&self.function, format!("publish: {e}")),
        }
    }
}

/// What a running instance works with.
pub(crate) struct Ctx {
    pub(crate) out: Publisher,
    node_stop: watch::Receiver<bool>,
    stop: watch::Receiver<bool>,
}

impl Ctx {
    /// Resolves once the instance is asked to stop (or whoever could ask is gone).
    pub(crate) async fn stopped(&mut self) {
        let node = self.node_stop.wait_for(|s| *s);
        let own = self.stop.wait_for(|s| *s);
        tokio::select! {
            _ = node => {}
            _ = own => {}
        }
    }
}

struct Entry {
    function: String,
    kind: &'static str,
    source: String,
    output: String,
    started_at: u64,
    status: Arc<Status>,
    stop: Arc<watch::Sender<bool>>,
    task: Option<JoinHandle<()>>,
}

/// Starts, stops and lists function instances. Cheap to clone.
#[derive(Clone)]
pub struct Runner {
    inner: Arc<RunnerInner>,
}

struct RunnerInner {
    broker: Broker,
    store: FunctionStore,
    engine: wasmi::Engine,
    node_stop: watch::Receiver<bool>,
    instances: Mutex<BTreeMap<InstanceId, Entry>>,
    next_id: AtomicU64,
}

impl Runner {
    /// A runner for the functions in `store`, on `broker`; every instance stops once
    /// `stop` turns true (or its sender is dropped).
    pub fn new(broker: Broker, store: FunctionStore, stop: watch::Receiver<bool>) -> Runner {
        Runner {
            inner: Arc::new(RunnerInner {
                broker,
                store,
                engine: wasm::engine(),
                node_stop: stop,
                instances: Mutex::new(BTreeMap::new()),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    /// Its function store.
    pub fn store(&self) -> &FunctionStore {
        &self.inner.store
    }

    /// Starts the stored function `name` on the records matching `source`, publishing its
    /// results to `output`. The module is compiled (or the first child spawned) before it
    /// returns, so a bad module or a missing command is an error here, not a failed
    /// instance later. Must be called within a Tokio runtime.
    ///
    /// # Errors
    /// Unknown function, malformed filter or topic, a module that does not compile or
    /// lacks the ABI's exports, a command that cannot be started.
    pub async fn start(
        &self,
        name: &str,
        source: &str,
        output: &str,
    ) -> Result<InstanceId, FunctionError> {
        let broker_err = |source| FunctionError::Broker {
            name: name.to_string(),
            source,
        };
        fogline_wire::validate_topic(output).map_err(|e| {
            broker_err(BrokerError::InvalidTopic(format!("output {output:?}: {e}")))
        })?;
        let id = self.inner.next_id.fetch_add(1, Relaxed);
        let stop = Arc::new(watch::channel(false).0);
        let (spec, lease) = self.inner.store.lease(name, stop.clone())?;
        let link = self.inner.broker.link(&format!("function/{name}/{id}"));
        let opts = SubscribeOptions {
            no_local: true,
            ..SubscribeOptions::default()
        };
        let sub = link.subscribe(source, opts).map_err(broker_err)?;
        let status = Arc::new(Status::default());
        let ctx = Ctx {
            out: Publisher {
                function: name.to_string(),
                link,
                output: output.to_string(),
                status: status.clone(),
            },
            node_stop: self.inner.node_stop.clone(),
            stop: stop.subscribe(),
        };
        let kind = spec.kind_name();
        let run: std::pin::Pin<Box<dyn std::future::Future<Output = InstanceState> + Send>> =
            match spec.kind {
                FunctionKind::Wasm(w) => {
                    // Validating and compiling a large module is CPU work: off the runtime.
                    let (engine, owned) = (self.inner.engine.clone(), name.to_string());
                    let compile = move || wasm::WasmFunction::new(&engine, &owned, &w);
                    let f = tokio::task::spawn_blocking(compile).await.map_err(|e| {
                        FunctionError::Wasm {
                            name: name.to_string(),
                            reason: format!("the compiler panicked: {e}"),
                        }
                    })??;
                    Box::pin(wasm::run(ctx, f, sub))
                }
                FunctionKind::Process(p) => {
                    let child = process::spawn(name, &p)?;
                    status.set_pid(child.id());
                    Box::pin(process::run(ctx, p, sub, child))
                }
            };
        let finished = status.clone();
        let function = name.to_string();
        let task = tokio::spawn(async move {
            let state = run.await;
            if let InstanceState::Failed { reason } = &state {
                tracing::warn!(%function, %reason, "function instance failed");
            }
            *finished.state.lock() = Some(state);
            drop(lease);
        });
        let mut instances = self.inner.instances.lock();
        forget_old(&mut instances);
        instances.insert(
            id,
            Entry {
                function: name.to_string(),
                kind,
                source: source.to_string(),
                output: output.to_string(),
                started_at: now_micros(),
                status,
                stop,
                task: Some(task),
            },
        );
        Ok(id)
    }

    /// Stops instance `id` and waits until it has ended (a process child killed and
    /// reaped). Stopping an ended instance returns its final snapshot.
    ///
    /// # Errors
    /// [`FunctionError::NoInstance`].
    pub async fn stop(&self, id: InstanceId) -> Result<InstanceInfo, FunctionError> {
        let task = {
            let mut instances = self.inner.instances.lock();
            let entry = instances
                .get_mut(&id)
                .ok_or(FunctionError::NoInstance(id))?;
            entry.stop.send_replace(true);
            entry.task.take()
        };
        if let Some(task) = task {
            if let Err(e) = task.await {
                tracing::error!(id, error = %e, "function instance task ended abnormally");
            }
        }
        self.get(id).ok_or(FunctionError::NoInstance(id))
    }

    /// A snapshot of instance `id`.
    pub fn get(&self, id: InstanceId) -> Option<InstanceInfo> {
        self.inner.instances.lock().get(&id).map(|e| info(id, e))
    }

    /// Every instance, running or recently ended, by id.
    pub fn list(&self) -> Vec<InstanceInfo> {
        let instances = self.inner.instances.lock();
        instances.iter().map(|(id, e)| info(*id, e)).collect()
    }

    /// Instance `id`'s live counters (to register with a metrics registry).
    pub fn counters(&self, id: InstanceId) -> Option<Arc<Counters>> {
        let instances = self.inner.instances.lock();
        instances.get(&id).map(|e| e.status.counters.clone())
    }
}

fn info(id: InstanceId, e: &Entry) -> InstanceInfo {
    let c = &e.status.counters;
    InstanceInfo {
        id,
        function: e.function.clone(),
        kind: e.kind,
        source: e.source.clone(),
        output: e.output.clone(),
        state: e
            .status
            .state
            .lock()
            .clone()
            .unwrap_or(InstanceState::Running),
        started_at: e.started_at,
        records_in: c.records_in.load(Relaxed),
        records_out: c.records_out.load(Relaxed),
        failures: c.failures.load(Relaxed),
        restarts: c.restarts.load(Relaxed),
        dropped: c.dropped.load(Relaxed),
        last_failure: e.status.last_failure.lock().clone(),
        pid: Some(e.status.pid.load(Relaxed)).filter(|p| *p != 0),
    }
}

/// Drops the oldest ended instances beyond [`KEEP_ENDED`], so the list stays bounded.
fn forget_old(instances: &mut BTreeMap<InstanceId, Entry>) {
    let ended: Vec<InstanceId> = instances
        .iter()
        .filter(|(_, e)| e.status.state.lock().is_some())
        .map(|(id, _)| *id)
        .collect();
    for id in ended.iter().take(ended.len().saturating_sub(KEEP_ENDED)) {
        instances.remove(id);
    }
}
