//! The broker: routes each published batch to the streams that capture its
//! topic and to the queues of the live subscriptions that match it.
//!
//! Routing is cached per topic: a route lists the matching subscriptions,
//! shared-subscription groups and streams, and is valid while the broker's
//! generation (bumped under the subscription write lock on every change, and
//! by every change to the set of streams or their subjects) is the one it was
//! computed under. After every such change the cache is emptied: a stale route
//! left in it until its topic came again would keep what it names alive (an
//! ended subscription, its connection's session, a deleted stream).
//!
//! Managing streams and consumers at runtime is in `manage`, the catalog that keeps
//! the set of streams across restarts in `catalog`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use fogline_log::RecoveryReport;
use fogline_profile::Interest;
use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;

use crate::batch::Batch;
use crate::catalog::{reconcile, Catalog};
use crate::clients::{ClientHandle, Clients, Protocol};
use crate::config::{BrokerConfig, SlowConsumerPolicy, StorageMode, StreamConfig};
use crate::consumer::{Consumer, ConsumerOptions, Opener};
use crate::direct::{DirectSink, Handoff};
use crate::error::BrokerError;
use crate::guard::{ClientGuard, Guard};
use crate::profiled::{with_filter, Profiles};
use crate::queue::{CloseReason, Push, QueueLimits, SubQueue};
use crate::stats::BrokerStats;
use crate::stream::Stream;
use crate::trie::Trie;

/// Unacknowledged batches at least this large (bytes) are handed to the subscribers' writers
/// before the append starts (see [`Broker::publish_unacked`]); below it the yield costs more
/// than it saves.
const YIELD_BEFORE_APPEND: usize = 64 * 1024;

/// Options of a live subscription.
#[derive(Clone, Debug, Default)]
pub struct SubscribeOptions {
    /// Deliver through the priority lane of the writer.
    pub priority: bool,
    /// Override the server's slow-consumer policy for this subscription.
    pub policy: Option<SlowConsumerPolicy>,
    /// Shared-subscription group: each batch goes to one member of the
    /// group subscribed with the same filter.
    pub group: Option<String>,
    /// Do not deliver batches published by `origin` (MQTT no-local).
    pub no_local: bool,
    /// Only records whose data profile satisfies this interest's terms (its topic, if
    /// any, is ignored: the filter is the subscription's). An interest without terms is
    /// a plain subscription. See `profiled`.
    pub interest: Option<Interest>,
    /// The subscriber's access: its filter must be one it may subscribe to, and only the
    /// messages of topics it may read reach it (`None`: not checked, as for the
    /// in-process link). See [`crate::guard`].
    pub reader: Option<ClientGuard>,
}

/// A live subscription; the subscriber drains its queue.
pub struct Subscription {
    id: u64,
    filter: String,
    origin: u64,
    opts: SubscribeOptions,
    /// `opts.no_local`, changeable while the subscription lives (MQTT 5 replaces a
    /// subscription's options in place, without losing what is queued: MQTT-3.8.4-3).
    no_local: AtomicBool,
    queue: Arc<SubQueue>,
    direct: Option<Arc<dyn DirectSink>>,
    /// The interest, with the filter as its topic (`None`: a plain subscription).
    interest: Option<Interest>,
}

impl Subscription {
    /// The interest profile it routes by, with its filter as the topic (`None`: a plain
    /// subscription).
    pub fn interest(&self) -> Option<&Interest> {
        self.interest.as_ref()
    }

    /// Broker-wide id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The topic filter.
    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// The queue to drain.
    pub fn queue(&self) -> &Arc<SubQueue> {
        &self.queue
    }

    /// The origin of the connection or session that holds it.
    pub fn origin(&self) -> u64 {
        self.origin
    }

    /// The options it was made with (`no_local` may have changed since: see
    /// [`Subscription::no_local`]).
    pub fn options(&self) -> &SubscribeOptions {
        &self.opts
    }

    /// Whether batches from the subscriber's own origin are skipped now.
    pub fn no_local(&self) -> bool {
        self.no_local.load(Ordering::Relaxed)
    }

    /// Changes no-local for batches published from now on; what is queued stays queued.
    pub fn set_no_local(&self, on: bool) {
        self.no_local.store(on, Ordering::Relaxed);
    }

    /// Has the direct sink, if any, keep its durable copy of `batch` (see
    /// [`DirectSink::persist`]).
    pub(crate) fn persist(&self, batch: &Arc<Batch>) -> std::io::Result<()> {
        match &self.direct {
            Some(d) => d.persist(self.id, batch),
            None => Ok(()),
        }
    }

    /// Hands `batch` to the direct sink if there is one and nothing is queued before it.
    fn try_direct(&self, handoff: Handoff, batch: &Batch) -> bool {
        handoff == Handoff::Direct
            && self
                .direct
                .as_ref()
                .is_some_and(|d| self.queue.is_idle() && d.try_deliver(batch))
    }
}

struct Group {
    members: Vec<Arc<Subscription>>,
    next: AtomicUsize,
}

#[derive(Default)]
struct Route {
    generation: u64,
    subs: Vec<Arc<Subscription>>,
    groups: Vec<Group>,
    streams: Vec<Arc<Stream>>,
}

/// The subscriptions a batch from `origin` goes to: every matching one (but its own under
/// no-local) and one live member of each shared group, taken in turn. Iterate once per
/// batch: it advances the groups' turns.
fn targets(route: &Route, origin: u64) -> impl Iterator<Item = &Subscription> {
    let subs = route
        .subs
        .iter()
        .filter(move |s| !(s.no_local() && s.origin == origin))
        .map(|s| &**s);
    let members = route.groups.iter().filter_map(|group| {
        let n = group.members.len();
        let start = group.next.fetch_add(1, Ordering::Relaxed);
        (0..n)
            .map(|i| &group.members[(start + i) % n])
            .find(|m| m.queue.closed().is_none())
            .map(|m| &**m)
    });
    subs.chain(members)
}

#[derive(Default)]
pub(crate) struct Subs {
    pub(crate) trie: Trie,
    pub(crate) by_id: HashMap<u64, Arc<Subscription>>,
    /// Interests and announced producers (`profiled`).
    pub(crate) profiles: Profiles,
}

/// Most topics whose routes are cached; past it the cache starts over.
const ROUTE_CACHE_MAX: usize = 16_384;
/// Longer topics are routed without the cache, which so holds 4 MiB of topics at most
/// (16,384 topics of 64 KiB would be 1 GiB).
const ROUTE_CACHE_TOPIC_MAX: usize = 256;

/// The broker core, shared by every connection (cheap to clone).
#[derive(Clone)]
pub struct Broker {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) config: BrokerConfig,
    pub(crate) subs: RwLock<Subs>,
    /// Subscriptions with an interest: while 0, no batch reads the subscriptions' lock.
    pub(crate) profiled: AtomicUsize,
    /// The node's store, once its component installed it.
    pub(crate) store: RwLock<Option<Arc<dyn crate::queries::StoreQueries>>>,
    pub(crate) generation: AtomicU64,
    /// Looked up for every published batch: foldhash, a tenth the instructions of std's
    /// SipHash for a short topic; its per-process random seed keeps crafted collisions hard.
    routes: Mutex<foldhash::HashMap<String, Arc<Route>>>,
    /// The streams, replaced whole when one is created or deleted (readers take a snapshot).
    pub(crate) streams: RwLock<Arc<[Arc<Stream>]>>,
    /// The catalog; its lock also serialises every change to the set of streams.
    pub(crate) catalog: Mutex<Catalog>,
    next_id: AtomicU64,
    pub(crate) stats: Arc<BrokerStats>,
    clients: Arc<Clients>,
    /// When the broker opened, microseconds since the UNIX epoch.
    started_us: u64,
    /// Users and access control.
    guard: Arc<Guard>,
}

impl Broker {
    /// Opens every configured stream (recovering their logs) and returns the
    /// broker with one recovery report per stream.
    ///
    /// # Errors
    /// A bad configuration or a stream whose log cannot be opened.
    ///
    /// The streams are those of the node's catalog (`<data_dir>/node/streams.json`), with
    /// the configuration's `streams` applied where they changed since they were last applied
    /// (see `catalog::reconcile`); a new node with none configured gets one named `default`
    /// capturing every topic. A node whose default storage is `memory` keeps no catalog.
    pub fn open(
        config: BrokerConfig,
    ) -> Result<(Broker, Vec<(String, RecoveryReport)>), BrokerError> {
        for (i, cfg) in config.streams.iter().enumerate() {
            if config.streams[..i].iter().any(|s| s.name == cfg.name) {
                return Err(BrokerError::Config(format!(
                    "stream {:?} is defined twice",
                    cfg.name
                )));
            }
        }
        let path =
            (config.storage != StorageMode::Memory).then(|| Catalog::path_in(&config.data_dir));
        if path.is_some() {
            crate::manage::empty_trash(&config.data_dir);
        }
        let stored = Catalog::load(path.clone())?;
        let seed = [StreamConfig::new("default", vec!["#".into()])];
        let (catalog, changed) = reconcile(stored, path, &config.streams, &seed);
        let mut streams = Vec::new();
        let mut reports = Vec::new();
        for cfg in catalog.streams() {
            let (stream, report) = Stream::open(cfg, &config)?;
            reports.push((cfg.name.clone(), report));
            streams.push(Arc::new(stream));
        }
        if changed {
            // Not fatal: the same reconciliation is made at the next start (a full disk must
            // not keep a node from starting).
            if let Err(e) = catalog.save() {
                tracing::warn!(error = %e, "cannot write the stream catalog; the configuration's streams are applied again at the next start");
            }
        }
        let inner = Inner {
            config,
            subs: RwLock::new(Subs::default()),
            profiled: AtomicUsize::new(0),
            store: RwLock::new(None),
            generation: AtomicU64::new(1),
            routes: Mutex::new(foldhash::HashMap::default()),
            streams: RwLock::new(streams.into()),
            catalog: Mutex::new(catalog),
            next_id: AtomicU64::new(1),
            stats: Arc::new(BrokerStats::default()),
            clients: Arc::new(Clients::default()),
            started_us: crate::batch::now_micros(),
            guard: Arc::new(Guard::default()),
        };
        let broker = Broker {
            inner: Arc::new(inner),
        };
        // A new ACL changes who may read which topic: every route is computed again.
        let weak = Arc::downgrade(&broker.inner);
        broker.inner.guard.set_on_change(Box::new(move || {
            if let Some(inner) = weak.upgrade() {
                let broker = Broker { inner };
                {
                    let _subs = broker.inner.subs.write();
                    broker.inner.generation.fetch_add(1, Ordering::AcqRel);
                }
                broker.drop_routes();
            }
        }));
        Ok((broker, reports))
    }

    /// The configuration in force.
    pub fn config(&self) -> &BrokerConfig {
        &self.inner.config
    }

    /// Counters.
    pub fn stats(&self) -> &BrokerStats {
        &self.inner.stats
    }

    /// A fresh id for a connection or session (the `origin` of its batches).
    pub fn next_origin(&self) -> u64 {
        self.inner.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers a connection of `protocol` from `addr` (see [`crate::clients`]); its id is a
    /// fresh origin. Keep the handle while the connection lives.
    pub fn register_client(&self, protocol: Protocol, addr: impl Into<String>) -> ClientHandle {
        let id = self.next_origin();
        self.inner.clients.register(id, protocol, addr.into())
    }

    /// The node's users and access control.
    pub fn guard(&self) -> &Arc<Guard> {
        &self.inner.guard
    }

    /// The node's connections.
    pub fn clients(&self) -> &Clients {
        &self.inner.clients
    }

    /// When the broker opened, microseconds since the UNIX epoch.
    pub fn started_us(&self) -> u64 {
        self.inner.started_us
    }

    /// Waits until every durable consumer position stored so far is on disk (they are
    /// written by a thread of each stream). Blocks: call it off the runtime threads.
    pub fn sync_positions(&self) {
        for s in self.streams().iter() {
            s.sync_positions();
        }
    }

    /// The streams, now (a snapshot: streams created or deleted later are not in it).
    pub fn streams(&self) -> Arc<[Arc<Stream>]> {
        self.inner.streams.read().clone()
    }

    /// The stream called `name`.
    pub fn stream(&self, name: &str) -> Option<Arc<Stream>> {
        self.inner
            .streams
            .read()
            .iter()
            .find(|s| s.name() == name)
            .cloned()
    }

    /// Largest record (payload + headers) accepted.
    pub fn max_message(&self) -> usize {
        self.inner
            .config
            .max_message_bytes
            .as_u64()
            .min(u32::MAX as u64) as usize
    }

    /// Checks every record of a batch against the size limit.
    ///
    /// # Errors
    /// [`BrokerError::MessageTooLarge`] naming the first record over it.
    pub fn check_sizes(&self, batch: &Batch) -> Result<(), BrokerError> {
        if batch.records.is_empty() {
            // Nothing to deliver, and a queue would count it as no records at all.
            return Err(BrokerError::EmptyBatch);
        }
        let max = self.max_message();
        // A record's payload and headers are part of the block, so a block within the limit
        // holds no record over it: the common case needs no walk through the records.
        if batch.records.as_bytes().len() <= max {
            return Ok(());
        }
        for r in batch.records.iter_ref() {
            let size = r.payload.len() + r.headers.len();
            if size > max {
                return Err(BrokerError::MessageTooLarge { size, max });
            }
        }
        Ok(())
    }

    /// Stores the batch in every stream that captures its topic, then queues
    /// it for every matching subscription. Returns once the records are as
    /// durable as their streams promise, so the caller may acknowledge them.
    /// On an error nothing was delivered, and the publisher may retry without
    /// duplicating anything (MQTT QoS 2 relies on it), except after a failed
    /// `fsync` flush: records of the failed batch may come back after a
    /// restart (see [`Stream::durable_until`](crate::Stream::durable_until)).
    ///
    /// Under the `block` policy this waits while a subscriber's queue is full
    /// (at most the configured block timeout for the whole batch, after which a
    /// subscriber still full is disconnected).
    ///
    /// With [`Handoff::Direct`], idle subscribers' sinks are offered the stored batch before
    /// it is queued.
    ///
    /// # Errors
    /// Oversize records or a storage failure; in both cases nothing may be
    /// acknowledged.
    pub async fn publish(&self, batch: Batch, handoff: Handoff) -> Result<(), BrokerError> {
        let stored = self.store_acked(batch)?;
        stored.durable().await?;
        self.deliver(stored, handoff).await
    }

    /// The first half of [`publish`](Broker::publish): checks the batch and stores it in
    /// every stream that captures its topic. The batch may be acknowledged and delivered
    /// once [`Stored::durable`] returns, then handed to [`deliver`](Broker::deliver). A
    /// connection that pipelines acked batches stores each as it arrives and waits for their
    /// durability in order, so one `fsync` flush covers many of its batches (group commit
    /// within a connection, not only across connections).
    ///
    /// # Errors
    /// As [`publish`](Broker::publish): nothing may be acknowledged.
    pub fn store_acked(&self, batch: Batch) -> Result<Stored, BrokerError> {
        self.check_sizes(&batch)?;
        let route = self.route(batch.topic.as_str());
        let stored = self.store(&route, &batch);
        // `fsync` streams: acknowledged (and delivered) once durable, by group commit. What
        // they took, also before a failing stream, gets flushed.
        for stream in &route.streams {
            stream.flush_soon();
        }
        Ok(Stored {
            waits: stored?,
            route,
            batch: Arc::new(batch),
        })
    }

    /// The second half of [`publish`](Broker::publish): queues a stored batch for every
    /// matching subscription (after [`Stored::durable`]). Each subscription's sink first
    /// keeps its durable copy ([`DirectSink::persist`]).
    ///
    /// # Errors
    /// A sink could not keep its copy: the batch must not be acknowledged. It is delivered
    /// regardless (to that subscription too, without the copy), so a retry can cost a
    /// duplicate, never a loss.
    pub async fn deliver(&self, stored: Stored, handoff: Handoff) -> Result<(), BrokerError> {
        let Stored { route, batch, .. } = stored;
        let started = tokio::time::Instant::now();
        let mut failed = None;
        for sub in targets(&route, batch.origin) {
            if let Err(e) = sub.persist(&batch) {
                failed.get_or_insert(e);
            }
            if !self.try_direct(sub, handoff, &batch) {
                self.offer(sub, &batch, started).await;
            }
        }
        for (sub, part) in self.profiled_targets(&batch) {
            if let Err(e) = sub.persist(&part) {
                failed.get_or_insert(e);
            }
            if !self.try_direct(&sub, handoff, &part) {
                self.offer(&sub, &part, started).await;
            }
        }
        match failed {
            None => Ok(()),
            Some(e) => Err(BrokerError::io(
                format!("a subscriber's durable copy of {}", batch.topic.as_str()),
                e,
            )),
        }
    }

    /// Publishes for a publisher that is not acknowledged (native
    /// fire-and-forget, MQTT QoS 0): live subscriptions get the batch first,
    /// then the streams store it. Such a publisher never learns of a failure
    /// and never retries, so its subscribers need not wait for the append's
    /// copy and checksum (or an fsync).
    ///
    /// For a batch of [`YIELD_BEFORE_APPEND`] bytes or more that was queued
    /// for someone and that a stream captures, the task yields once before
    /// the append: on the one-thread runtime of a pinned server the
    /// subscribers' writers then send it before the append rather than after.
    /// A subscriber whose queue is full (`block` policy) gets the batch after
    /// the append, so a stuck subscriber never holds back the log.
    ///
    /// Consequences: if the append fails, live subscribers have the records
    /// and the log does not; another publisher's batch may reach the log
    /// before one that was queued live earlier (order per publisher is kept).
    ///
    /// With [`Handoff::Direct`], idle subscribers' sinks are offered the batch first of all.
    /// Sinks are not asked to keep a durable copy ([`DirectSink::persist`]): nobody waits
    /// on one (an MQTT durable session journals such a batch when it takes it).
    ///
    /// # Errors
    /// Oversize records (nothing delivered) or a storage failure (delivered
    /// live, not stored).
    pub async fn publish_unacked(&self, batch: Batch, handoff: Handoff) -> Result<(), BrokerError> {
        self.check_sizes(&batch)?;
        let route = self.route(batch.topic.as_str());
        let batch = Arc::new(batch);
        let mut full = Vec::new();
        let mut queued = false;
        for sub in targets(&route, batch.origin) {
            if self.try_direct(sub, handoff, &batch) {
                continue;
            }
            match self.try_offer(sub, &batch) {
                Push::Queued => queued = true,
                Push::Full => full.push(sub),
                Push::Closed | Push::Disconnected => {}
            }
        }
        let profiled = self.profiled_targets(&batch);
        let mut full_profiled = Vec::new();
        for (sub, part) in &profiled {
            if self.try_direct(sub, handoff, part) {
                continue;
            }
            match self.try_offer(sub, part) {
                Push::Queued => queued = true,
                Push::Full => full_profiled.push((sub, part)),
                Push::Closed | Push::Disconnected => {}
            }
        }
        if queued
            && full.is_empty()
            && full_profiled.is_empty()
            && !route.streams.is_empty()
            && batch.weight() >= YIELD_BEFORE_APPEND
        {
            tokio::task::yield_now().await;
        }
        let stored = self.store(&route, &batch);
        for stream in &route.streams {
            stream.flush_soon();
        }
        let started = tokio::time::Instant::now();
        for sub in full {
            self.offer(sub, &batch, started).await;
        }
        for (sub, part) in full_profiled {
            self.offer(sub, part, started).await;
        }
        stored.map(drop)
    }

    /// Appends `batch` to every stream of `route`, all or none; returns the `fsync` streams
    /// among them with the offset each must make durable for it.
    fn store(&self, route: &Route, batch: &Batch) -> Result<Vec<(Arc<Stream>, u64)>, BrokerError> {
        let mut waits = Vec::new();
        if let [stream] = route.streams.as_slice() {
            let next = stream.append(batch)?;
            if stream.storage() == StorageMode::Fsync {
                waits.push((stream.clone(), next));
            }
        } else {
            // Room in every stream first: one that failed after another had taken the batch
            // would leave it there, and the publisher's retry would store it twice. The logs
            // are locked in the broker's order of streams, so two publishers cannot deadlock
            // (one may wait for another's roll).
            let mut held = Vec::with_capacity(route.streams.len());
            for stream in &route.streams {
                held.push(stream.reserve(batch)?);
            }
            for (stream, log) in route.streams.iter().zip(held) {
                let next = stream.append_reserved(log, batch)?;
                if stream.storage() == StorageMode::Fsync {
                    waits.push((stream.clone(), next));
                }
            }
        }
        let stats = &self.inner.stats;
        stats
            .records_in
            .fetch_add(u64::from(batch.count()), Ordering::Relaxed);
        stats
            .bytes_in
            .fetch_add(batch.weight() as u64, Ordering::Relaxed);
        stats.batches_in.fetch_add(1, Ordering::Relaxed);
        Ok(waits)
    }

    fn try_direct(&self, sub: &Subscription, handoff: Handoff, batch: &Batch) -> bool {
        let done = sub.try_direct(handoff, batch);
        if done {
            self.inner
                .stats
                .direct_deliveries
                .fetch_add(1, Ordering::Relaxed);
        }
        done
    }

    /// Queues `batch` for `sub` if it has room (or need not wait for it); counts a
    /// subscriber this push cut off as slow.
    fn try_offer(&self, sub: &Subscription, batch: &Arc<Batch>) -> Push {
        let push = sub.queue.push(batch);
        if push == Push::Disconnected {
            self.inner.stats.add_slow_consumer(&SlowSub(sub));
        }
        push
    }

    /// Queues `batch` for `sub`, waiting for room under the `block` policy until the block
    /// timeout after `started`: one deadline for all of a batch's subscribers, so a batch
    /// waits one block timeout in all however many full queues it meets (one client with
    /// many stuck subscriptions cannot hold a publisher for one timeout each), and a wait
    /// woken by room another publisher then took does not start over.
    ///
    /// Nor does a wait outlast the queue's own stall: a queue whose subscriber has taken
    /// nothing for a block timeout while records waited is stuck, and is cut off without a
    /// wait (see `SubQueue::push`). So each stuck subscriber costs its publishers one block timeout in
    /// all, however many publishers and batches meet it, and stuck subscribers found one
    /// after another do not add up.
    async fn offer(&self, sub: &Subscription, batch: &Arc<Batch>, started: tokio::time::Instant) {
        let deadline = started + sub.queue.limits().block_timeout;
        while self.try_offer(sub, batch) == Push::Full {
            let until = sub
                .queue
                .stuck_deadline()
                .map_or(deadline, |s| s.min(deadline));
            let left = until.saturating_duration_since(tokio::time::Instant::now());
            if !sub.queue.wait_for_space(batch, left).await {
                sub.queue.close(CloseReason::SlowConsumer);
                self.inner.stats.add_slow_consumer(&SlowSub(sub));
                return;
            }
        }
    }

    /// Test hook: topics whose routes are cached.
    #[doc(hidden)]
    pub fn cached_routes(&self) -> usize {
        self.inner.routes.lock().len()
    }

    fn route(&self, topic: &str) -> Arc<Route> {
        let generation = self.inner.generation.load(Ordering::Acquire);
        if let Some(r) = self.inner.routes.lock().get(topic) {
            if r.generation == generation {
                return r.clone();
            }
        }
        let route = Arc::new(self.compute_route(topic));
        if topic.len() > ROUTE_CACHE_TOPIC_MAX {
            return route;
        }
        let mut cache = self.inner.routes.lock();
        // Read under the cache's lock: a change bumps the generation before it empties the
        // cache, so a route computed before the change is either emptied with the cache or
        // seen stale here, and never stays behind holding what the change ended.
        if route.generation != self.inner.generation.load(Ordering::Acquire) {
            return route;
        }
        if cache.len() >= ROUTE_CACHE_MAX {
            cache.clear();
        }
        cache.insert(topic.to_string(), route.clone());
        route
    }

    /// Empties the route cache after a change that bumped the generation (see the module
    /// header): every cached route is stale, and one kept until its topic is published
    /// again would hold on to the subscriptions and streams it names. Call it after the
    /// bump, and after letting go of the subscriptions' lock.
    pub(crate) fn drop_routes(&self) {
        let mut cache = self.inner.routes.lock();
        if !cache.is_empty() {
            cache.clear();
        }
    }

    fn compute_route(&self, topic: &str) -> Route {
        let subs = self.inner.subs.read();
        // Read under the lock: a change bumps it while holding the write lock.
        let generation = self.inner.generation.load(Ordering::Acquire);
        let mut ids = Vec::new();
        subs.trie.matches(topic, &mut ids);
        let mut route = Route {
            generation,
            ..Route::default()
        };
        let mut groups: HashMap<(&str, &str), Vec<Arc<Subscription>>> = HashMap::new();
        for id in ids {
            let Some(sub) = subs.by_id.get(&id) else {
                continue;
            };
            // The ACL's read check, once per route rather than per message.
            if sub.opts.reader.as_ref().is_some_and(|r| !r.may_read(topic)) {
                continue;
            }
            match &sub.opts.group {
                Some(g) => groups
                    .entry((g.as_str(), sub.filter.as_str()))
                    .or_default()
                    .push(sub.clone()),
                None => route.subs.push(sub.clone()),
            }
        }
        route.groups = groups
            .into_values()
            .map(|mut members| {
                members.sort_by_key(|m| m.id);
                Group {
                    members,
                    next: AtomicUsize::new(0),
                }
            })
            .collect();
        route.streams = self
            .streams()
            .iter()
            .filter(|s| s.captures(topic))
            .cloned()
            .collect();
        route
    }

    /// Subscribes `filter`; batches are queued for the returned subscription
    /// and `waker` is notified whenever something is queued.
    ///
    /// # Errors
    /// [`BrokerError::InvalidFilter`] for a malformed filter.
    pub fn subscribe(
        &self,
        filter: &str,
        origin: u64,
        opts: SubscribeOptions,
        waker: Arc<Notify>,
    ) -> Result<Arc<Subscription>, BrokerError> {
        self.subscribe_direct(filter, origin, opts, waker, None)
    }

    /// As [`Broker::subscribe`], with a sink that publishers may write to directly while
    /// the subscription's queue is empty (see [`Handoff::Direct`]).
    ///
    /// # Errors
    /// [`BrokerError::InvalidFilter`] for a malformed filter.
    pub fn subscribe_direct(
        &self,
        filter: &str,
        origin: u64,
        opts: SubscribeOptions,
        waker: Arc<Notify>,
        direct: Option<Arc<dyn DirectSink>>,
    ) -> Result<Arc<Subscription>, BrokerError> {
        fogline_wire::validate_filter(filter)
            .map_err(|e| BrokerError::InvalidFilter(e.to_string()))?;
        if let Some(r) = &opts.reader {
            if !r.may_subscribe(filter) {
                return Err(BrokerError::NotAuthorized(format!(
                    "may not subscribe to {filter:?}"
                )));
            }
        }
        let q = &self.inner.config.subscriptions;
        let limits = QueueLimits {
            max_records: q.max_records,
            max_bytes: q.max_bytes.as_u64() as usize,
            policy: opts.policy.unwrap_or(q.policy),
            block_timeout: q.block_timeout,
        };
        let interest = opts
            .interest
            .as_ref()
            .filter(|i| !i.terms.is_empty())
            .map(|i| with_filter(i, filter));
        let sub = Arc::new(Subscription {
            id: self.inner.next_id.fetch_add(1, Ordering::Relaxed),
            interest,
            filter: filter.to_string(),
            origin,
            no_local: AtomicBool::new(opts.no_local),
            opts,
            queue: Arc::new(SubQueue::with_stats(
                limits,
                waker,
                self.inner.stats.clone(),
            )),
            direct,
        });
        let mut subs = self.inner.subs.write();
        if sub.interest.is_some() {
            self.inner.profiled.fetch_add(1, Ordering::Relaxed);
        } else {
            subs.trie.insert(filter, sub.id);
        }
        subs.by_id.insert(sub.id, sub.clone());
        subs.profiles.add(&sub);
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
        drop(subs);
        self.drop_routes();
        Ok(sub)
    }

    /// Ends a subscription and closes its queue.
    pub fn unsubscribe(&self, sub: &Subscription) {
        let mut subs = self.inner.subs.write();
        let removed = subs.by_id.remove(&sub.id).is_some();
        if removed {
            if sub.interest.is_some() {
                self.inner.profiled.fetch_sub(1, Ordering::Relaxed);
            } else {
                subs.trie.remove(&sub.filter, sub.id);
            }
            subs.profiles.remove(sub.id, sub.interest.is_some());
            self.inner.generation.fetch_add(1, Ordering::AcqRel);
        }
        drop(subs);
        if removed {
            self.drop_routes();
        }
        sub.queue.close(CloseReason::Unsubscribed);
    }

    /// Number of live subscriptions.
    pub fn subscription_count(&self) -> usize {
        self.inner.subs.read().by_id.len()
    }

    /// Every live subscription (for the admin API).
    pub(crate) fn subscription_list(&self) -> Vec<Arc<Subscription>> {
        self.inner.subs.read().by_id.values().cloned().collect()
    }

    /// Opens a consumer on stream `stream` for a component of the node ([`Opener::Node`]).
    ///
    /// # Errors
    /// Unknown stream, malformed filter, or a durable name already in use.
    pub fn open_consumer(
        &self,
        stream: &str,
        opts: ConsumerOptions,
    ) -> Result<Consumer, BrokerError> {
        self.open_consumer_as(stream, opts, Opener::Node)
    }

    /// [`open_consumer`](Broker::open_consumer) for `opener`: a client's durable consumer
    /// is bound to the first logged-in user who opens it and refused to others, and the
    /// rules' consumers are refused to clients (`NotAuthorized`).
    ///
    /// # Errors
    /// As `open_consumer`, and `NotAuthorized`.
    pub fn open_consumer_as(
        &self,
        stream: &str,
        opts: ConsumerOptions,
        opener: Opener<'_>,
    ) -> Result<Consumer, BrokerError> {
        let s = self
            .stream(stream)
            .ok_or_else(|| BrokerError::UnknownStream(stream.to_string()))?;
        Consumer::open(s, opts, opener)
    }

    /// Applies retention to every stream.
    pub fn enforce_retention(&self) {
        let now = crate::batch::now_micros();
        for s in self.streams().iter() {
            s.enforce_retention(now);
        }
    }
}

/// An acknowledged batch, stored but perhaps not yet durable (see [`Broker::store_acked`]).
pub struct Stored {
    route: Arc<Route>,
    batch: Arc<Batch>,
    /// The `fsync` streams that hold it, and the offset each must make durable.
    waits: Vec<(Arc<Stream>, u64)>,
}

impl Stored {
    /// Whether the batch is durable in every stream that holds it: `Some(Ok)` yes (also with
    /// no `fsync` stream), `Some(Err)` never (a flush failed), `None` not yet.
    pub fn durable_state(&self) -> Option<Result<(), BrokerError>> {
        for (stream, upto) in &self.waits {
            match stream.durable_state(*upto) {
                Some(Ok(())) => {}
                other => return other,
            }
        }
        Some(Ok(()))
    }

    /// Returns once the batch is durable in every stream that holds it.
    ///
    /// # Errors
    /// As [`Stream::durable_until`]: a flush failed, so the batch must not be acknowledged.
    pub async fn durable(&self) -> Result<(), BrokerError> {
        for (stream, upto) in &self.waits {
            stream.durable_until(*upto).await?;
        }
        Ok(())
    }

    /// Records in the batch.
    pub fn count(&self) -> u32 {
        self.batch.count()
    }

    /// The batch's size in bytes (see [`Batch::weight`]).
    pub fn weight(&self) -> usize {
        self.batch.weight()
    }
}

/// A subscription as the slow-consumer warning names it.
struct SlowSub<'a>(&'a Subscription);

impl std::fmt::Display for SlowSub<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.0;
        let policy = match s.queue.limits().policy {
            crate::config::SlowConsumerPolicy::Block => "block: stuck past the block timeout",
            crate::config::SlowConsumerPolicy::Disconnect => "disconnect: its queue was full",
            crate::config::SlowConsumerPolicy::DropOldest => "drop-oldest",
        };
        write!(f, "subscription {} to {:?} ({policy})", s.id, s.filter)
    }
}
