//! State shared by every MQTT connection of a server: the session registry
//! (attach, take over, detach, expire), retained messages, the journal.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use fogline_broker::{Batch, Broker, BrokerError, Handoff, Stored, SubscribeOptions};
use fogline_net::intake::{Intake, ReadBudget};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::config::MqttConfig;
use crate::direct::SubSink;
use crate::message::Message;
use crate::retain::Retained;
use crate::session::{qos_of, ConnHandle, Outgoing, Session, State, SubEntry};
use crate::store::entry::{Entry, SubRecord};
use crate::store::{Recovered, Store, StoreError};
use fogline_auth::Authenticator;

/// Everything MQTT connections share.
pub(crate) struct Shared {
    pub broker: Broker,
    pub config: MqttConfig,
    pub auth: Arc<dyn Authenticator>,
    pub sessions: Mutex<HashMap<String, Arc<Session>>>,
    pub retained: Retained,
    pub store: Option<Store>,
    /// Client ids of durable sessions (journaled).
    pub durable: Mutex<HashSet<String>>,
    next_conn: AtomicU64,
    /// Itself, for the thread that compacts the journal.
    me: std::sync::Weak<Shared>,
    /// Offline sessions' tasks and wills being published: stopped with the server, so
    /// none holds the broker after it.
    tasks: Mutex<tokio::task::JoinSet<()>>,
    /// Set by `close`: tasks are not started any more.
    closed: std::sync::atomic::AtomicBool,
    /// The thread of the last journal compaction, joined by `close`.
    compactor: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Journal appends that failed: an acknowledgement waits on none failing meanwhile.
    journal_failures: AtomicU64,
    /// When a journal failure was last logged.
    journal_error_logged: Mutex<Option<std::time::Instant>>,
    /// Client ids whose session end the journal did not take: it may still hold an older
    /// session of theirs, which replay would merge into a new one (its messages, its QoS 2
    /// ids). A new session of such an id is journaled after a fresh end, or refused. Each
    /// id carries the `stale_marks` count it was marked at: a compaction begun after that
    /// drops its older session from the journal, and the id from here (see `compact`).
    stale: Mutex<HashMap<String, u64>>,
    /// Ids marked stale so far.
    stale_marks: AtomicU64,
    /// The node's budget for read buffers and the packet time limit (see
    /// `fogline_net::intake`).
    pub intake: Mutex<(Arc<ReadBudget>, Duration)>,
}

/// The read budget an MQTT server has when the node gives none: 64 MiB.
pub const DEFAULT_READ_BUDGET: usize = 64 << 20;
/// The packet time limit an MQTT server has when the node gives none.
pub const DEFAULT_FRAME_TIMEOUT: Duration = Duration::from_secs(30);

/// Why [`Shared::attach`] refused a connection.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AttachError {
    /// A new session would pass `max_sessions`.
    TooManySessions,
    /// The journal did not take the end of an older session of the client id.
    NotJournaled,
    /// The client id's session belongs to another user.
    NotOwner,
}

/// A delayed will: published unless the session gets a new connection first.
pub(crate) struct PendingWill {
    pub msg: Message,
    pub delay: u32,
}

impl Shared {
    pub fn new(
        broker: Broker,
        config: MqttConfig,
        auth: Arc<dyn Authenticator>,
        store: Option<(Store, Recovered)>,
    ) -> Arc<Shared> {
        let (store, recovered) = match store {
            Some((s, r)) => (Some(s), Some(r)),
            None => (None, None),
        };
        let shared = Arc::new_cyclic(|me| Shared {
            broker,
            config,
            auth,
            sessions: Mutex::new(HashMap::new()),
            retained: Retained::default(),
            store,
            durable: Mutex::new(HashSet::new()),
            next_conn: AtomicU64::new(1),
            me: me.clone(),
            tasks: Mutex::new(tokio::task::JoinSet::new()),
            closed: Default::default(),
            compactor: Mutex::new(None),
            journal_failures: AtomicU64::new(0),
            journal_error_logged: Mutex::new(None),
            stale: Mutex::new(HashMap::new()),
            stale_marks: AtomicU64::new(0),
            intake: Mutex::new((ReadBudget::new(DEFAULT_READ_BUDGET), DEFAULT_FRAME_TIMEOUT)),
        });
        if let Some(r) = recovered {
            shared.restore(r);
        }
        shared
    }

    /// A new connection's side of the read budget, with buffers of `base` bytes.
    pub fn intake(&self, base: usize) -> Intake {
        let (budget, timeout) = self.intake.lock().clone();
        Intake::new(budget, base, timeout)
    }

    /// Sessions (connected and offline) and retained messages.
    pub fn counts(&self) -> crate::listener::SessionCounts {
        let total = self.sessions.lock().len();
        let clients = self.broker.clients();
        let connected = clients.count(fogline_broker::Protocol::Mqtt)
            + clients.count(fogline_broker::Protocol::MqttWs);
        crate::listener::SessionCounts {
            connected: connected.min(total),
            offline: total.saturating_sub(connected),
            retained: self.retained.len(),
        }
    }

    /// Writes framed journal entries; a failure is logged and returned to the caller, which
    /// withholds what depends on them.
    pub fn journal(&self, framed: &[u8]) -> Result<(), StoreError> {
        self.append(framed, false)
    }

    /// As [`journal`](Shared::journal), for entries another connection's acknowledgement
    /// depends on (a message queued for a durable session): a failure is also counted (see
    /// [`journal_failures`](Shared::journal_failures)).
    pub fn journal_counted(&self, framed: &[u8]) -> Result<(), StoreError> {
        self.append(framed, true)
    }

    /// Counts a failure no append was tried for (see `Session::write`).
    pub fn count_failure(&self) {
        self.journal_failures.fetch_add(1, Ordering::Relaxed);
    }

    fn append(&self, framed: &[u8], counted: bool) -> Result<(), StoreError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let written = store.append_framed(framed);
        if let Err(e) = &written {
            let failures = if counted {
                self.journal_failures.fetch_add(1, Ordering::Relaxed) + 1
            } else {
                self.journal_failures.load(Ordering::Relaxed)
            };
            // Once a second at most: a full disk fails every append.
            let mut logged = self.journal_error_logged.lock();
            if logged.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                *logged = Some(std::time::Instant::now());
                tracing::error!(error = %e, failures, "cannot journal MQTT state: what depends on it is not acknowledged");
            }
        }
        // Read before the compaction begins (see `compact`).
        let marks = self.stale_marks.load(Ordering::Acquire);
        if store.begin_compaction() {
            // On its own thread: the caller may hold a session lock the snapshot takes.
            let me = self.me.clone();
            let spawned = std::thread::Builder::new()
                .name("mqtt-compact".into())
                .spawn(move || {
                    if let Some(shared) = me.upgrade() {
                        shared.compact(marks);
                    }
                });
            match spawned {
                Ok(thread) => *self.compactor.lock() = Some(thread),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot start the MQTT journal compaction");
                    store.abandon_compaction();
                }
            }
        }
        written
    }

    /// How many journal appends have failed since the server started. An acknowledgement
    /// that promises journaled state reads it before and after the work it covers: a
    /// failure between the two, of any connection's entry, withholds it.
    pub fn journal_failures(&self) -> u64 {
        self.journal_failures.load(Ordering::Relaxed)
    }

    /// The server stopped: offline sessions' tasks end (what they held is journaled) and
    /// the journal is not compacted any more.
    pub async fn close(&self) {
        let mut tasks = {
            let mut guard = self.tasks.lock();
            self.closed.store(true, Ordering::Relaxed);
            std::mem::take(&mut *guard)
        };
        tasks.shutdown().await;
        if let Some(store) = &self.store {
            store.close();
        }
        // A compaction under way holds the server's state: wait for it (it gives up at
        // its end now that the store is closed).
        let thread = self.compactor.lock().take();
        if let Some(thread) = thread {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }

    /// Runs `task` until it ends or the server stops.
    fn spawn(&self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        let mut tasks = self.tasks.lock();
        if self.closed.load(Ordering::Relaxed) {
            return; // the server stopped (a will not yet published stays unpublished)
        }
        while tasks.try_join_next().is_some() {}
        tasks.spawn(task);
    }

    /// Writes a snapshot of the durable state and makes it the journal (see
    /// [`Store::finish_compaction`]). Done, it forgets the ids marked `stale` before
    /// `marks` was read, as the compaction began: their older sessions had ended (so the
    /// snapshot holds none of them) and written their last entry before it copied appends,
    /// so the new journal holds nothing of them.
    fn compact(&self, marks: u64) {
        let Some(store) = &self.store else { return };
        let started = std::time::Instant::now();
        let before = store.len();
        let snapshot = self.snapshot();
        match store.finish_compaction(&snapshot) {
            Ok(after) => {
                self.stale.lock().retain(|_, marked| *marked >= marks);
                tracing::info!(
                    before,
                    after,
                    ms = started.elapsed().as_millis() as u64,
                    "MQTT state journal compacted"
                );
            }
            Err(e) => tracing::warn!(error = %e, "MQTT state journal not compacted"),
        }
    }

    /// Journal entries that rebuild the durable state: retained messages, and each durable
    /// session's subscriptions, journaled messages and unreleased incoming QoS 2 ids.
    /// Read from memory, so it equals what the journal holds only because every change to
    /// durable state is journaled under the lock that guards it (the session's state, the
    /// retained map); a change that broke that rule would be lost, or kept, by a compaction.
    pub(crate) fn snapshot(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for m in self.retained.all() {
            Entry::RetainSet(&m).frame_into(&mut out);
        }
        let sessions: Vec<Arc<Session>> = self.sessions.lock().values().cloned().collect();
        for s in sessions {
            let st = s.state.lock();
            if st.ended || !Session::durable(self, &st) {
                continue;
            }
            s.frame_all(&st, &mut out);
        }
        out
    }

    fn restore(self: &Arc<Self>, r: Recovered) {
        for m in r.retained.into_values() {
            self.retained.apply(&m);
        }
        let count = r.sessions.len();
        for (client, rs) in r.sessions {
            let origin = self.broker.next_origin();
            let session = Session::new(client.clone(), rs.owner, origin, rs.expiry);
            {
                let mut st = session.state.lock();
                for rec in rs.subs {
                    match self.broker_subscribe(&session, &rec) {
                        Ok(sub) => {
                            st.subs.insert(rec.key.clone(), SubEntry::new(sub, rec));
                        }
                        Err(e) => {
                            tracing::warn!(client, error = %e, "cannot restore a subscription")
                        }
                    }
                }
                for (seq, m) in rs.msgs {
                    let o = Outgoing {
                        seq,
                        msg: m.msg,
                        qos: qos_of(m.qos),
                        retain: m.retain,
                        sub_ids: m.sub_ids,
                        pkid: m.pkid.unwrap_or(0),
                        released: m.released,
                        resend: false,
                    };
                    st.next_seq = st.next_seq.max(seq + 1);
                    match m.pkid {
                        Some(id) => {
                            st.mark_pkid(id, true);
                            st.inflight.push_back(o);
                        }
                        None => st.pending.push_back(o),
                    }
                }
                st.qos2_in.extend(rs.qos2_in);
                // Entries without a record (an older journal's): its end must reach the
                // journal, or a new session of the id would have them merged into it.
                st.resync = rs.expiry == 0;
            }
            if rs.expiry > 0 {
                self.durable.lock().insert(client.clone());
            }
            self.sessions.lock().insert(client, session.clone());
            self.spawn_offline(session, 0, None);
        }
        if count > 0 {
            tracing::info!(
                sessions = count,
                retained = self.retained.len(),
                "MQTT state recovered"
            );
        }
    }

    /// Subscribes a session's filter on the broker.
    pub fn broker_subscribe(
        &self,
        session: &Session,
        rec: &SubRecord,
    ) -> Result<Arc<fogline_broker::Subscription>, BrokerError> {
        let (group, filter) = split_shared(&rec.key).unwrap_or((None, &rec.key));
        let opts = SubscribeOptions {
            priority: false,
            policy: Some(self.config.slow_subscriber),
            group: group.map(str::to_string),
            no_local: rec.no_local,
            interest: crate::profile::parse_recorded(rec.interest.as_deref())?,
            reader: Some(self.access(session)),
        };
        let sink = SubSink {
            session: session.me.clone(),
            shared: self.me.clone(),
            key: rec.key.clone(),
            journaled: self.store.is_some(),
        };
        self.broker.subscribe_direct(
            filter,
            session.origin,
            opts,
            session.waker.clone(),
            Some(Arc::new(sink)),
        )
    }

    /// Replaces the broker subscription of the session's `rec.key` with one made for `rec`
    /// (the same filter with another interest: a broker subscription's interest is fixed).
    /// What the old one had queued is taken into the session first, as [`Session::pump`]
    /// does (connected, up to `max_queued`), so it is delivered before anything the new one
    /// gets; what is left is dropped with the old subscription.
    ///
    /// # Errors
    /// The broker refused the new subscription: the old one stays, with its record.
    pub fn resubscribe(
        &self,
        session: &Session,
        st: &mut State,
        rec: SubRecord,
    ) -> Result<(), BrokerError> {
        let sub = self.broker_subscribe(session, &rec)?;
        // Under the session lock throughout: a batch routed to the new subscription is
        // journaled as routed (`Session::persist`) only once it is in place.
        session.pump(self, st);
        let Some(entry) = st.subs.get_mut(&rec.key) else {
            self.broker.unsubscribe(&sub);
            return Err(BrokerError::Invalid(format!("no subscription {}", rec.key)));
        };
        let old = std::mem::replace(&mut entry.sub, sub);
        entry.rec = rec;
        self.broker.unsubscribe(&old);
        Ok(())
    }

    /// Publishes a message nobody acknowledges (QoS 0, a will): updates the retained store
    /// when it is retained and accepted, then hands it to the broker. `acked`: stored before
    /// it is delivered (a will of QoS 1 or 2; acknowledged PUBLISHes take `store_acked`);
    /// else it goes to live subscribers before the streams.
    /// `handoff` as in [`fogline_broker::Handoff`].
    pub async fn publish(
        &self,
        msg: &Message,
        origin: u64,
        acked: bool,
        handoff: Handoff,
    ) -> Result<(), BrokerError> {
        if acked {
            // A will: nobody is left to refuse it to, so it goes out even when the journal
            // did not take its retained state (it is then not retained).
            let batch = self.batch(msg, origin)?;
            let stored = self.broker.store_acked(batch)?;
            if let Err(e) = self.retain(msg) {
                tracing::warn!(topic = msg.topic.as_str(), error = %e, "a will is published but not retained");
            }
            stored.durable().await?;
            // Nobody is left to refuse it to either; a durable session that could not
            // journal it still has it queued, and its next whole-session write holds it.
            if let Err(e) = self.broker.deliver(stored, handoff).await {
                tracing::warn!(topic = msg.topic.as_str(), error = %e, "a will is delivered but not journaled for every durable session");
            }
            return Ok(());
        }
        let batch = self.batch(msg, origin)?;
        self.broker.check_sizes(&batch)?;
        // Unacknowledged: a retained message the journal refused is not kept, and nobody
        // is told (its failure is logged).
        let _ = self.retain(msg);
        self.broker.publish_unacked(batch, handoff).await
    }

    /// The first half of an acked [`publish`](Shared::publish): stores the message and, once
    /// it is stored, applies it as the retained message; it may be delivered and
    /// acknowledged once durable (see [`fogline_broker::AckQueue`]). A refused message
    /// (too large, storage failed, its retained state not journaled) does not become the
    /// retained one.
    pub fn store_acked(&self, msg: &Message, origin: u64) -> Result<Stored, BrokerError> {
        let batch = self.batch(msg, origin)?;
        let stored = self.broker.store_acked(batch)?;
        self.retain(msg).map_err(|e| BrokerError::Io {
            context: format!("retained message on {}", msg.topic.as_str()),
            source: std::io::Error::other(e),
        })?;
        Ok(stored)
    }

    /// Applies a retained message once journaled; nothing for others.
    fn retain(&self, msg: &Message) -> Result<(), StoreError> {
        if !msg.retain {
            return Ok(());
        }
        let mut j = Vec::new();
        if msg.payload.is_empty() {
            Entry::RetainDel(&msg.topic).frame_into(&mut j);
        } else {
            Entry::RetainSet(msg).frame_into(&mut j);
        }
        self.retained.apply_then(msg, || self.journal(&j))
    }

    /// The message as a one-record batch.
    fn batch(&self, msg: &Message, origin: u64) -> Result<Batch, BrokerError> {
        let records = msg
            .to_block()
            .map_err(|e| BrokerError::Config(format!("cannot encode an MQTT message: {e}")))?;
        Ok(Batch {
            topic: msg.topic.clone(),
            records,
            timestamp: msg.received,
            priority: false,
            origin,
        })
    }

    /// Attaches a new connection to the session of `client_id`, taking it
    /// over from a connection still attached. Returns the session, the
    /// connection's handle and whether a previous session was resumed.
    ///
    /// # Errors
    /// A new session would pass `max_sessions`, or the journal did not take the end of an
    /// older session of `client_id` (see `stale`) and cannot take the durable session
    /// that would replace it.
    pub async fn attach(
        self: &Arc<Self>,
        client_id: &str,
        owner: Option<&str>,
        clean_start: bool,
        expiry: u32,
    ) -> Result<(Arc<Session>, u64, Arc<Notify>, bool), AttachError> {
        let conn_id = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let kick = Arc::new(Notify::new());
        loop {
            let busy = {
                let mut map = self.sessions.lock();
                let existing = map.get(client_id).cloned();
                match existing {
                    Some(s) if !self.may_take(&s, owner) => {
                        return Err(AttachError::NotOwner);
                    }
                    Some(s) => {
                        let mut st = s.state.lock();
                        if let Some(h) = &st.conn {
                            h.kick.notify_one(); // [MQTT-3.1.4-3]
                            drop(st);
                            Some(s)
                        } else if clean_start {
                            // [MQTT-3.1.2-4] discard the previous session.
                            drop(st);
                            map.remove(client_id);
                            self.end_session(&s);
                            None
                        } else {
                            let was_durable = Session::durable(self, &st);
                            let old_expiry = st.expiry;
                            s.set_expiry(&mut st, expiry);
                            // Not written: a crash keeps the expiry it had; the CONNACK
                            // promises no more. Unless the session turns durable while the
                            // journal may hold an older one of its id (`stale`): as for a new
                            // session, a restart would bring that one back instead.
                            let written = s.journal_session(self, &mut st);
                            if written.is_err()
                                && !was_durable
                                && Session::durable(self, &st)
                                && self.stale.lock().contains_key(client_id)
                            {
                                s.set_expiry(&mut st, old_expiry);
                                self.durable.lock().remove(client_id);
                                return Err(AttachError::NotJournaled);
                            }
                            st.conn = Some(ConnHandle {
                                id: conn_id,
                                kick: kick.clone(),
                                direct: None,
                            });
                            st.epoch += 1;
                            drop(st);
                            s.attached.notify_waiters();
                            return Ok((s, conn_id, kick, true));
                        }
                    }
                    None => None,
                }
            };
            match busy {
                Some(s) => {
                    let _ = tokio::time::timeout(Duration::from_millis(50), s.detached.notified())
                        .await;
                }
                None => {
                    let mut map = self.sessions.lock();
                    if map.contains_key(client_id) {
                        continue; // another connection raced us in
                    }
                    if map.len() >= self.config.max_sessions {
                        return Err(AttachError::TooManySessions);
                    }
                    let origin = self.broker.next_origin();
                    let owner = owner.map(str::to_owned);
                    let s = Session::new(client_id.to_string(), owner, origin, expiry);
                    {
                        let mut st = s.state.lock();
                        st.conn = Some(ConnHandle {
                            id: conn_id,
                            kick: kick.clone(),
                            direct: None,
                        });
                        st.epoch = 1;
                        self.journal_new_session(&s, &mut st)?;
                    }
                    map.insert(client_id.to_string(), s.clone());
                    return Ok((s, conn_id, kick, false));
                }
            }
        }
    }

    /// Whether `user` may take `s` over (resume it, replace it, or disconnect its client).
    /// With authentication on, only its owner may; a session without one (anonymous, or
    /// journaled before owners were) proves no one's, so any admitted client may.
    fn may_take(&self, s: &Session, user: Option<&str>) -> bool {
        !self.broker.guard().authenticates() || s.owner.is_none() || s.owner.as_deref() == user
    }

    /// What the ACL lets `session`'s client do (its owner and client id).
    pub fn access(&self, session: &Session) -> fogline_broker::ClientGuard {
        self.broker
            .guard()
            .client(session.owner.as_deref(), &session.client_id)
    }

    /// Remembers that the journal did not take the end of `client_id`'s session.
    pub fn mark_stale(&self, client_id: &str) {
        let mut stale = self.stale.lock();
        let mark = self.stale_marks.fetch_add(1, Ordering::AcqRel);
        stale.insert(client_id.to_string(), mark);
    }

    /// The journal took an end (or a whole new state) of `client_id`'s session.
    pub fn clear_stale(&self, client_id: &str) {
        self.stale.lock().remove(client_id);
    }

    /// Journals a new session. Of a client id whose older session's end the journal did
    /// not take (`stale`), its first journal write replaces that session (`State::resync`).
    ///
    /// # Errors
    /// A durable new session of such an id could not be journaled: it must not start, as a
    /// restart would bring the older one back under a client that started clean. (A
    /// session that is not durable starts: nothing of it is journaled.)
    fn journal_new_session(&self, s: &Session, st: &mut State) -> Result<(), AttachError> {
        if self.store.is_none() {
            return Ok(());
        }
        let stale = self.stale.lock().contains_key(&s.client_id);
        st.resync = stale;
        if !Session::durable(self, st) {
            return Ok(());
        }
        match s.journal_session(self, st) {
            Ok(()) => Ok(()),
            Err(_) if stale => {
                self.durable.lock().remove(&s.client_id);
                Err(AttachError::NotJournaled)
            }
            // Not written: after a crash the session is not present, as the client learns
            // from its CONNACK (its next journal write tries again, see `State::resync`).
            Err(_) => Ok(()),
        }
    }

    /// Lets go of a session when its connection ends: publishes the will
    /// (now, or after its delay), ends the session when its expiry is 0,
    /// else leaves it to the offline task.
    pub fn detach(
        self: &Arc<Self>,
        session: &Arc<Session>,
        conn_id: u64,
        will: Option<PendingWill>,
    ) {
        let mut st = session.state.lock();
        if st.conn.as_ref().map(|h| h.id) != Some(conn_id) {
            return;
        }
        st.conn = None;
        let expiry = st.expiry;
        let epoch = st.epoch;
        drop(st);
        session.detached.notify_waiters();
        let will = will.map(|mut w| {
            w.delay = w.delay.min(expiry);
            w
        });
        let will = match will {
            Some(w) if w.delay == 0 => {
                self.spawn_will(w.msg, session.origin);
                None
            }
            other => other,
        };
        if expiry == 0 {
            self.end_if_idle(session, epoch);
        } else {
            self.spawn_offline(session.clone(), epoch, will);
        }
    }

    fn spawn_will(self: &Arc<Self>, mut msg: Message, origin: u64) {
        msg.received = fogline_broker::now_micros(); // its expiry counts from publication
        let shared = self.clone();
        self.spawn(async move {
            if let Err(e) = shared.publish(&msg, origin, true, Handoff::Direct).await {
                tracing::warn!(error = %e, "cannot publish a will message");
            }
        });
    }

    /// While no connection is attached: drains the session's subscription
    /// queues (so publishers never wait on an offline client; a durable
    /// session journals what it takes), publishes a delayed will, and ends
    /// the session at its expiry.
    fn spawn_offline(
        self: &Arc<Self>,
        session: Arc<Session>,
        epoch: u64,
        will: Option<PendingWill>,
    ) {
        let shared = self.clone();
        self.spawn(async move {
            let start = tokio::time::Instant::now();
            let expiry = session.state.lock().expiry;
            let end = (expiry != u32::MAX).then(|| start + Duration::from_secs(u64::from(expiry)));
            let mut will = will;
            loop {
                let attached = session.attached.notified();
                tokio::pin!(attached);
                attached.as_mut().enable();
                {
                    let mut st = session.state.lock();
                    if st.conn.is_some() || st.epoch != epoch || st.ended {
                        let ended = st.ended;
                        drop(st);
                        // Ended (a clean start took its client id): a will still delayed goes
                        // out now, as the session ends first [MQTT-3.1.3-9]. Resumed: never.
                        if let Some(w) = will.take().filter(|_| ended) {
                            shared.spawn_will(w.msg, session.origin);
                        }
                        session.waker.notify_one(); // pass on a wake-up we may have taken
                        return;
                    }
                    session.pump(&shared, &mut st);
                }
                let will_at = will
                    .as_ref()
                    .map(|w| start + Duration::from_secs(u64::from(w.delay)));
                let far = start + Duration::from_secs(100 * 365 * 24 * 3600);
                tokio::select! {
                    _ = attached => {}
                    _ = session.waker.notified() => {}
                    _ = tokio::time::sleep_until(will_at.unwrap_or(far)), if will_at.is_some() => {
                        if let Some(w) = will.take() {
                            shared.spawn_will(w.msg, session.origin); // [MQTT-3.1.3-9]
                        }
                    }
                    _ = tokio::time::sleep_until(end.unwrap_or(far)), if end.is_some() => {
                        if shared.end_if_idle(&session, epoch) {
                            // The delay is capped at the expiry: when both are due, the
                            // will is published [MQTT-3.1.3-9].
                            if let Some(w) = will.take() {
                                shared.spawn_will(w.msg, session.origin);
                            }
                            tracing::debug!(client = %session.client_id, "session expired");
                        }
                        return;
                    }
                }
            }
        });
    }

    /// Ends `session` and takes it out of the registry, unless a connection attached to it
    /// since `epoch`. All under the registry's lock, which `attach` holds while it resumes
    /// or starts a session: a client that reconnects just as its session expires either
    /// resumes it or gets a new one, never one ended under it, and the end's journal entry
    /// comes before the new session's.
    fn end_if_idle(&self, session: &Arc<Session>, epoch: u64) -> bool {
        let mut map = self.sessions.lock();
        if !map
            .get(&session.client_id)
            .is_some_and(|s| Arc::ptr_eq(s, session))
        {
            return false;
        }
        {
            let st = session.state.lock();
            if st.conn.is_some() || st.epoch != epoch {
                return false;
            }
        }
        map.remove(&session.client_id);
        self.end_session(session);
        true
    }

    /// Ends a session: unsubscribes everything and forgets its state.
    pub fn end_session(&self, session: &Session) {
        let mut st = session.state.lock();
        st.ended = true;
        let resync = st.resync;
        for (_, e) in st.subs.drain() {
            self.broker.unsubscribe(&e.sub);
        }
        st.pending.clear();
        st.inflight.clear();
        st.resends = 0;
        drop(st);
        // An offline task waiting on it learns it ended (and publishes a delayed will).
        session.attached.notify_waiters();
        // Only what the journal may hold needs an end there.
        if self.store.is_some() && (self.durable.lock().remove(&session.client_id) || resync) {
            let mut j = Vec::new();
            Entry::SessionDel(&session.client_id).frame_into(&mut j);
            // Not written: after a restart the session is back until it expires, and a new
            // session of the id first ends it again (see `stale`).
            match self.journal(&j) {
                Ok(()) => self.clear_stale(&session.client_id),
                Err(_) => self.mark_stale(&session.client_id),
            }
        }
    }
}

/// Splits `$share/group/filter` into the group and the filter; `None` when
/// `key` is not a shared subscription. Errors are reported by the caller's
/// validation (`Some((None, ..))` never happens).
pub(crate) fn split_shared(key: &str) -> Option<(Option<&str>, &str)> {
    let rest = key.strip_prefix("$share/")?;
    let (group, filter) = rest.split_once('/')?;
    Some((Some(group), filter))
}

#[cfg(test)]
mod tests {
    use fogline_broker::{BrokerConfig, StorageMode};

    use super::*;
    use fogline_auth::AllowAll;

    fn shared(dir: &std::path::Path) -> Arc<Shared> {
        Shared::new(broker(dir), MqttConfig::default(), Arc::new(AllowAll), None)
    }

    /// With a journal in `dir/mqtt` that compacts at its smallest size.
    fn shared_with_store(dir: &std::path::Path) -> Arc<Shared> {
        let (mut store, recovered) = Store::open(&dir.join("mqtt"), false).unwrap();
        store.set_compact_min(crate::store::MIN_COMPACT);
        let store = Some((store, recovered));
        Shared::new(
            broker(dir),
            MqttConfig::default(),
            Arc::new(AllowAll),
            store,
        )
    }

    fn broker(dir: &std::path::Path) -> Broker {
        let config = BrokerConfig {
            storage: StorageMode::Memory,
            data_dir: dir.to_path_buf(),
            ..BrokerConfig::default()
        };
        Broker::open(config).unwrap().0
    }

    /// An id whose session end the journal did not take is forgotten once a compaction,
    /// begun after it was marked, has dropped that session from the journal; one marked
    /// after the compaction began is kept (its session may be in what it copied).
    #[tokio::test]
    async fn a_compaction_forgets_the_stale_ids_it_made_clean() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared_with_store(dir.path());
        let compacted = |shared: &Shared| {
            let thread = shared.compactor.lock().take();
            thread.is_some_and(|t| t.join().is_ok())
        };

        // Driven by appends: the journal grows past its compaction size.
        shared.mark_stale("gone");
        let mut entry = Vec::new();
        Entry::SessionDel(&"x".repeat(64)).frame_into(&mut entry);
        while !compacted(&shared) {
            shared.journal(&entry).unwrap();
        }
        assert!(
            shared.stale.lock().is_empty(),
            "forgotten by the compaction"
        );

        // Marked after the compaction began: kept.
        shared.mark_stale("old");
        let marks = shared.stale_marks.load(Ordering::Acquire);
        shared.mark_stale("late");
        let store = shared.store.as_ref().unwrap();
        while !store.begin_compaction() {
            store.append_framed(&entry).unwrap();
        }
        shared.compact(marks);
        let left: Vec<String> = shared.stale.lock().keys().cloned().collect();
        assert_eq!(left, ["late"]);
    }

    /// A session that is not durable, of a client id whose older session's end the journal
    /// did not take, resumed as durable between its connection's end and its removal: the
    /// resume is refused when the journal cannot take the session whole, as a new session
    /// of the id would be (a restart would bring the older session back).
    #[tokio::test]
    async fn a_resume_turning_a_stale_session_durable_must_be_journaled() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared_with_store(dir.path());
        shared.mark_stale("c");
        let (s, _, _, _) = shared.attach("c", None, true, 0).await.unwrap();
        let epoch = {
            let mut st = s.state.lock();
            assert!(st.resync, "a stale id's session replaces the older one");
            st.conn = None; // what `detach` does before it removes the session
            st.epoch
        };
        shared.store.as_ref().unwrap().break_for_test();
        let refused = shared.attach("c", None, false, 600).await.err();
        assert_eq!(refused, Some(AttachError::NotJournaled));
        assert_eq!(s.state.lock().expiry, 0, "left as it was");
        assert!(!shared.durable.lock().contains("c"));
        assert!(
            shared.end_if_idle(&s, epoch),
            "removed as if no resume came"
        );
    }

    /// Subscribing a filter again with another interest replaces the broker subscription:
    /// what the old one had queued is taken into the session first (delivered before what
    /// the new one gets), and the new one routes by the new interest.
    #[tokio::test]
    async fn another_interest_replaces_the_subscription_after_what_it_queued() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared(dir.path());
        let (s, _, _, _) = shared.attach("c", None, true, 0).await.unwrap();
        let rec = |interest: &str| SubRecord {
            key: "t".into(),
            qos: 1,
            no_local: false,
            retain_as_published: false,
            retain_handling: 0,
            sub_id: None,
            interest: Some(interest.into()),
        };
        let old = shared.broker_subscribe(&s, &rec("sensor=lidar")).unwrap();
        let entry = SubEntry::new(old.clone(), rec("sensor=lidar"));
        s.state.lock().subs.insert("t".into(), entry);
        let publish_both = || async {
            for sensor in ["lidar", "camera"] {
                let mut props = crate::codec::Props::default();
                props.user.push(("sensor".into(), sensor.into()));
                let msg = Message {
                    topic: "t".into(),
                    payload: bytes::Bytes::from(sensor),
                    qos: crate::codec::QoS::AtLeastOnce,
                    retain: false,
                    props,
                    received: fogline_broker::now_micros(),
                };
                shared
                    .publish(&msg, 0, false, Handoff::Queue)
                    .await
                    .unwrap();
            }
        };
        let pending = |st: &State| -> Vec<String> {
            st.pending
                .iter()
                .map(|o| String::from_utf8_lossy(&o.msg.payload).into_owned())
                .collect()
        };
        publish_both().await;
        assert!(s.state.lock().pending.is_empty(), "queued, not taken yet");
        {
            let mut st = s.state.lock();
            shared
                .resubscribe(&s, &mut st, rec("sensor=camera"))
                .unwrap();
            assert_eq!(pending(&st), ["lidar"], "what the old one queued, first");
            assert!(old.queue().closed().is_some());
            assert_eq!(st.subs["t"].rec.interest.as_deref(), Some("sensor=camera"));
        }
        assert_eq!(shared.broker.subscription_count(), 1);
        publish_both().await;
        let mut st = s.state.lock();
        s.pump(&shared, &mut st);
        assert_eq!(pending(&st), ["lidar", "camera"]);
    }

    /// With authentication on, a client id's session is its owner's: another user (or an
    /// anonymous client) can neither resume it, replace it with a clean start, nor
    /// disconnect its client. A session without an owner proves no one's.
    #[tokio::test]
    async fn another_user_cannot_take_a_session_over() {
        let dir = tempfile::tempdir().unwrap();
        let b = broker(dir.path());
        let closed = fogline_broker::AuthConfig {
            allow_anonymous: Some(false),
            ..Default::default()
        };
        b.guard().configure(&closed).unwrap();
        let auth = Shared::new(b, MqttConfig::default(), Arc::new(AllowAll), None);
        let (s, first, _, _) = auth.attach("c", Some("alice"), false, 600).await.unwrap();
        for (user, clean) in [(Some("bob"), false), (Some("bob"), true), (None, true)] {
            let taken = auth.attach("c", user, clean, 600).await;
            assert!(
                matches!(taken, Err(AttachError::NotOwner)),
                "{user:?} {clean}"
            );
        }
        assert_eq!(s.state.lock().conn.as_ref().map(|h| h.id), Some(first));
        s.state.lock().conn = None;
        for user in [Some("bob"), None] {
            let taken = auth.attach("c", user, false, 600).await;
            assert!(
                matches!(taken, Err(AttachError::NotOwner)),
                "offline, {user:?}"
            );
        }
        let (again, _, _, resumed) = auth.attach("c", Some("alice"), false, 600).await.unwrap();
        assert!(resumed && Arc::ptr_eq(&again, &s));

        let (anon, _, _, _) = auth.attach("a", None, false, 600).await.unwrap();
        anon.state.lock().conn = None;
        let (taken, _, _, resumed) = auth.attach("a", Some("bob"), false, 600).await.unwrap();
        assert!(resumed && Arc::ptr_eq(&taken, &anon));

        // Without authentication a user name proves nothing, and nothing is refused.
        let open = shared(dir.path());
        let (s, _, _, _) = open.attach("c", Some("alice"), false, 600).await.unwrap();
        s.state.lock().conn = None;
        let (again, _, _, _) = open.attach("c", Some("bob"), false, 600).await.unwrap();
        assert!(Arc::ptr_eq(&again, &s));
    }

    /// The window `end_if_idle` closes: a connection ends, and before its session is
    /// taken out (expiry 0, or the expiry timer firing) the client reconnects and resumes it.
    #[tokio::test]
    async fn a_session_resumed_before_its_removal_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let shared = shared(dir.path());
        let (s, first, _, _) = shared.attach("c", None, false, 0).await.unwrap();
        let epoch = {
            let mut st = s.state.lock();
            assert_eq!(st.conn.as_ref().map(|h| h.id), Some(first));
            st.conn = None; // what `detach` does before it removes the session
            st.epoch
        };
        let (again, _, _, resumed) = shared.attach("c", None, false, 0).await.unwrap();
        assert!(resumed && Arc::ptr_eq(&again, &s));
        assert!(!shared.end_if_idle(&s, epoch), "resumed meanwhile");
        assert!(!s.state.lock().ended);
        assert!(shared.sessions.lock().contains_key("c"));
        // Idle at its own epoch, it goes.
        let epoch = {
            let mut st = s.state.lock();
            st.conn = None;
            st.epoch
        };
        assert!(shared.end_if_idle(&s, epoch));
        assert!(!shared.sessions.lock().contains_key("c"));
        assert!(s.state.lock().ended);
    }
}
