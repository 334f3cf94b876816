//! Functions on demand in the rules component: [`FunctionService`] wraps a
//! [`fogline_functions::Runner`] for triggers (it implements [`crate::Functions`]) and for
//! the REST routes of [`api`], and keeps per-function totals for [`metrics`].
//!
//! - Start is idempotent per (function, source, output): starting a function where it
//!   already runs answers the running instance, so an `always` trigger that keeps firing
//!   does not pile up instances that would each publish every result again.
//! - Stop stops every running instance of the function and waits until each has ended
//!   (a process child killed and reaped).
//! - Every instance is started here, so the totals see them all; an ended instance's
//!   counters are folded into its function's totals, which only grow (Prometheus counters),
//!   though the runner forgets old ended instances.

pub mod api;
pub mod metrics;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use fogline_functions::{
    Counters, FunctionError, FunctionStore, InstanceId, InstanceInfo, InstanceState, Runner,
};
use parking_lot::Mutex;

use crate::{FunctionFuture, Functions};

/// A function's counters: records in, records out, failures, restarts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Records its instances received.
    pub records_in: u64,
    /// Results its instances published.
    pub records_out: u64,
    /// Failed records (see [`fogline_functions::Counters::failures`]).
    pub failures: u64,
    /// Process restarts.
    pub restarts: u64,
}

impl Totals {
    fn add(&mut self, c: &Counters) {
        self.records_in += c.records_in.load(Relaxed);
        self.records_out += c.records_out.load(Relaxed);
        self.failures += c.failures.load(Relaxed);
        self.restarts += c.restarts.load(Relaxed);
    }
}

#[derive(Default)]
struct Tally {
    ended: Totals,
    live: Vec<(InstanceId, Arc<Counters>)>,
}

/// The node's functions on demand. Cheap to clone.
#[derive(Clone)]
pub struct FunctionService {
    runner: Runner,
    tallies: Arc<Mutex<BTreeMap<String, Tally>>>,
    /// One start at a time, so two starts of the same (function, source, output) make one.
    starting: Arc<tokio::sync::Mutex<()>>,
}

impl FunctionService {
    /// A service over `runner` (and its store).
    pub fn new(runner: Runner) -> FunctionService {
        FunctionService {
            runner,
            tallies: Arc::default(),
            starting: Arc::default(),
        }
    }

    /// The function store.
    pub fn store(&self) -> &FunctionStore {
        self.runner.store()
    }

    /// The runner.
    pub fn runner(&self) -> &Runner {
        &self.runner
    }

    /// Starts `name` on `source`, publishing to `output`; answers the instance and whether
    /// it is new (`false`: that function already ran there).
    ///
    /// # Errors
    /// As [`Runner::start`].
    pub async fn start(
        &self,
        name: &str,
        source: &str,
        output: &str,
    ) -> Result<(InstanceInfo, bool), FunctionError> {
        let _one = self.starting.lock().await;
        let same = |i: &InstanceInfo| {
            i.function == name
                && i.source == source
                && i.output == output
                && i.state == InstanceState::Running
        };
        if let Some(running) = self.runner.list().into_iter().find(same) {
            return Ok((running, false));
        }
        let id = self.runner.start(name, source, output).await?;
        if let Some(c) = self.runner.counters(id) {
            let mut tallies = self.tallies.lock();
            tallies
                .entry(name.to_string())
                .or_default()
                .live
                .push((id, c));
        }
        let info = self.runner.get(id).ok_or(FunctionError::NoInstance(id))?;
        Ok((info, true))
    }

    /// Stops every running instance of `name`; answers their final snapshots.
    ///
    /// # Errors
    /// [`FunctionError::NotFound`] when no such function is stored and none runs.
    pub async fn stop(&self, name: &str) -> Result<Vec<InstanceInfo>, FunctionError> {
        let running: Vec<InstanceId> = self
            .runner
            .list()
            .into_iter()
            .filter(|i| i.function == name && i.state == InstanceState::Running)
            .map(|i| i.id)
            .collect();
        if running.is_empty() && self.store().list().iter().all(|f| f.spec.name != name) {
            return Err(FunctionError::NotFound(name.to_string()));
        }
        let mut stopped = Vec::with_capacity(running.len());
        for id in running {
            stopped.push(self.runner.stop(id).await?);
        }
        Ok(stopped)
    }

    /// Stops every running instance (the node is stopping), waiting until each has ended,
    /// so no child outlives the node.
    pub async fn stop_all(&self) {
        for i in self.runner.list() {
            if i.state == InstanceState::Running {
                // Ended meanwhile or not: either way it no longer runs.
                let _ = self.runner.stop(i.id).await;
            }
        }
    }

    /// Instances of `name` (all functions' when `None`), running or recently ended.
    pub fn instances(&self, name: Option<&str>) -> Vec<InstanceInfo> {
        let mut all = self.runner.list();
        all.retain(|i| name.is_none_or(|n| i.function == n));
        all
    }

    /// Per function, the totals of every instance it ever ran here.
    pub fn totals(&self) -> BTreeMap<String, Totals> {
        let mut tallies = self.tallies.lock();
        let mut out = BTreeMap::new();
        for (name, tally) in tallies.iter_mut() {
            // Fold the ended ones: their counters no longer move.
            let runner = &self.runner;
            let ended = &mut tally.ended;
            tally.live.retain(|(id, c)| {
                let running = runner
                    .get(*id)
                    .is_some_and(|i| i.state == InstanceState::Running);
                if !running {
                    ended.add(c);
                }
                running
            });
            let mut t = tally.ended;
            for (_, c) in &tally.live {
                t.add(c);
            }
            out.insert(name.clone(), t);
        }
        out
    }
}

impl Functions for FunctionService {
    fn start<'a>(
        &'a self,
        name: &'a str,
        source: &'a str,
        output: &'a str,
    ) -> FunctionFuture<'a, String> {
        Box::pin(async move {
            let (info, _) = FunctionService::start(self, name, source, output)
                .await
                .map_err(|e| e.to_string())?;
            Ok(info.id.to_string())
        })
    }

    fn stop<'a>(&'a self, name: &'a str) -> FunctionFuture<'a, ()> {
        Box::pin(async move {
            FunctionService::stop(self, name)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        })
    }
}
