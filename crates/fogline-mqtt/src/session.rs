//! A session: the state that outlives a connection (subscriptions, queued
//! and inflight messages, unreleased incoming QoS 2 ids), section 4.1.
//!
//! Messages flow: broker subscription queue -> [`Session::pump`] -> `pending`
//! -> (the connection sends, within the client's receive maximum) ->
//! `inflight` until acknowledged. A durable session (store present and
//! expiry > 0) journals every QoS 1/2 message as the broker routes it
//! ([`Session::persist`], before the publisher is acknowledged, while the
//! message may still wait in the queue) or, if it was queued unjournaled, on
//! entering `pending`, and every state change after, so they survive a
//! crash of the server.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Weak};

use fogline_broker::{Batch, Subscription};
use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::codec::QoS;
use crate::direct::DirectOut;
use crate::message::Message;
use crate::shared::Shared;
use crate::store::entry::{Entry, SubRecord};
use crate::store::StoreError;

/// Words of the packet-id bitmap: one bit for each of the 65,536 ids.
const PKID_WORDS: usize = 1 << 10;

/// Bytes taken from one subscription queue per pump.
const DRAIN_BUDGET: usize = 256 * 1024;

/// One subscription of a session.
pub(crate) struct SubEntry {
    pub sub: Arc<Subscription>,
    pub rec: SubRecord,
    /// Batches journaled as they were routed here ([`Session::persist`]) and not yet taken
    /// from the queue, oldest first (publishers on other tasks may queue them in another
    /// order).
    pub persisted: VecDeque<Persisted>,
}

impl SubEntry {
    pub fn new(sub: Arc<Subscription>, rec: SubRecord) -> SubEntry {
        SubEntry {
            sub,
            rec,
            persisted: VecDeque::new(),
        }
    }
}

/// A batch a durable session journaled when the broker routed it, while it waits in the
/// subscription's queue: taken from there, its messages keep these sequence numbers and
/// are not journaled again.
pub(crate) struct Persisted {
    /// The very batch queued, matched by pointer (a `Weak` keeps its allocation, so the
    /// address is not reused). Once no one holds it, the queue dropped it: it never comes.
    pub batch: Weak<Batch>,
    /// Per record: how it was journaled, or None (QoS 0 here, or expired).
    pub recs: Vec<Option<Kept>>,
}

/// How a message of a [`Persisted`] batch was journaled.
#[derive(Clone, Debug)]
pub(crate) struct Kept {
    pub seq: u64,
    pub qos: QoS,
    pub retain: bool,
    pub sub_id: Option<u32>,
    /// For whole-session writes (it shares the batch's bytes).
    pub msg: Message,
}

/// A message on its way to the client.
#[derive(Clone, Debug)]
pub(crate) struct Outgoing {
    pub seq: u64,
    pub msg: Message,
    pub qos: QoS,
    pub retain: bool,
    pub sub_ids: Vec<u32>,
    /// Packet id once sent (0 before).
    pub pkid: u16,
    /// QoS 2: PUBREC received, PUBREL sent.
    pub released: bool,
    /// Sent on an earlier connection and not yet again on this one: it waits, with its
    /// packet id, for a slot in this connection's receive maximum.
    pub resend: bool,
}

/// The connection a session is attached to.
pub(crate) struct ConnHandle {
    pub id: u64,
    /// Notified to make the connection end (session taken over).
    pub kick: Arc<Notify>,
    /// Its socket, for publishers' direct QoS 0 writes (TCP only).
    pub direct: Option<DirectOut>,
}

/// How a journal write of a session matters (see [`Session::write`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Write {
    /// Another connection's acknowledgement depends on it (a message queued for this
    /// session): a failure is counted in `Shared::journal_failures`.
    Counted,
    /// The caller's own answer depends on it, and handles the failure.
    Required,
    /// Its loss costs at most a duplicate after a restart.
    BestEffort,
}

/// Least time between two whole-session writes of a session whose journal may not match it.
pub(crate) const RESYNC_BACKOFF: std::time::Duration = std::time::Duration::from_millis(200);

/// Mutable session state (behind the session's mutex; never held across an await).
pub(crate) struct State {
    /// By filter; looked up for every direct delivery (foldhash, as the broker's routes).
    pub subs: foldhash::HashMap<String, SubEntry>,
    pub pending: VecDeque<Outgoing>,
    pub inflight: VecDeque<Outgoing>,
    /// How many of `inflight` wait to be sent again (`Outgoing::resend`).
    pub resends: usize,
    pub qos2_in: HashSet<u16>,
    /// Packet ids in use, one bit each: empty until the first is taken, as most sessions
    /// (QoS 0 subscribers) never take one. 8 KiB in every session made churn of thousands of
    /// such clients cost tens of megabytes more at their peak (issue 31, item 2).
    used: Vec<u64>,
    next_pkid: u16,
    pub next_seq: u64,
    /// Session expiry interval in seconds (`u32::MAX`: never).
    pub expiry: u32,
    pub conn: Option<ConnHandle>,
    /// Bumped on every attach; a delayed will or expiry checks it.
    pub epoch: u64,
    pub ended: bool,
    /// Set by [`Session::pump`] when the broker cut a subscription off while a connection
    /// was attached (its slow-consumer policy: the client did not keep up); the connection
    /// takes it and ends.
    pub cut_off: bool,
    /// The journal may not match this session (its record or its end was not written, or
    /// it just became durable): its next journal write replaces the whole session (an end,
    /// then everything it holds), and best-effort entries wait for that.
    pub resync: bool,
    /// After a failed whole-session write: none is tried again before this.
    pub resync_after: Option<std::time::Instant>,
}

impl State {
    pub fn new(expiry: u32) -> State {
        State {
            subs: foldhash::HashMap::default(),
            pending: VecDeque::new(),
            inflight: VecDeque::new(),
            resends: 0,
            qos2_in: HashSet::new(),
            used: Vec::new(),
            next_pkid: 0,
            next_seq: 1,
            expiry,
            conn: None,
            epoch: 0,
            ended: false,
            cut_off: false,
            resync: false,
            resync_after: None,
        }
    }

    /// A packet id not in use by an inflight message.
    pub fn alloc_pkid(&mut self) -> u16 {
        loop {
            self.next_pkid = self.next_pkid.wrapping_add(1);
            let id = self.next_pkid;
            if id != 0 && !self.pkid_used(id) {
                self.mark_pkid(id, true);
                return id;
            }
        }
    }

    pub fn pkid_used(&self, id: u16) -> bool {
        self.used
            .get(usize::from(id / 64))
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    pub fn mark_pkid(&mut self, id: u16, used: bool) {
        if self.used.is_empty() {
            if !used {
                return;
            }
            self.used = vec![0; PKID_WORDS];
        }
        let w = &mut self.used[usize::from(id / 64)];
        if used {
            *w |= 1 << (id % 64);
        } else {
            *w &= !(1 << (id % 64));
        }
    }

    /// The subscription records, for the journal.
    pub fn sub_records(&self) -> Vec<SubRecord> {
        let mut v: Vec<SubRecord> = self.subs.values().map(|s| s.rec.clone()).collect();
        v.sort_by(|a, b| a.key.cmp(&b.key));
        v
    }
}

/// A session, shared by the registry and the connection attached to it.
pub(crate) struct Session {
    /// Itself, for the broker subscriptions' sinks made while only `&Session` is at hand.
    pub me: Weak<Session>,
    pub client_id: String,
    /// The user who created it (`None`: anonymous); with authentication on, only this user
    /// may resume or replace it.
    pub owner: Option<String>,
    /// Origin of this session's publications (for no local).
    pub origin: u64,
    /// Notified when a subscription queue has something.
    pub waker: Arc<Notify>,
    /// Notified when the attached connection lets go.
    pub detached: Notify,
    /// Notified when a connection attaches (stops the offline task).
    pub attached: Notify,
    pub state: Mutex<State>,
    /// `State::expiry` as last set (by [`Session::set_expiry`]), read without the lock by
    /// publishers' tasks: a session with expiry 0 journals nothing they route to it.
    expiry_hint: AtomicU32,
}

impl Session {
    pub fn new(client_id: String, owner: Option<String>, origin: u64, expiry: u32) -> Arc<Session> {
        Arc::new_cyclic(|me| Session {
            me: me.clone(),
            client_id,
            owner,
            origin,
            waker: Arc::new(Notify::new()),
            detached: Notify::new(),
            attached: Notify::new(),
            state: Mutex::new(State::new(expiry)),
            expiry_hint: AtomicU32::new(expiry),
        })
    }

    /// Sets the session expiry interval (seconds).
    pub fn set_expiry(&self, st: &mut State, expiry: u32) {
        st.expiry = expiry;
        self.expiry_hint.store(expiry, Ordering::Relaxed);
    }

    /// False when the session surely journals nothing (its expiry is 0), read without its
    /// lock; true may be out of date (the lock tells).
    pub fn may_be_durable(&self) -> bool {
        self.expiry_hint.load(Ordering::Relaxed) > 0
    }

    /// True when its state is journaled.
    pub fn durable(shared: &Shared, st: &State) -> bool {
        shared.store.is_some() && st.expiry > 0
    }

    /// Moves queued broker batches into `pending`, journaling the QoS 1/2
    /// messages of a durable session that [`Session::persist`] did not (and
    /// deleting from the journal those it did whose batch the queue dropped).
    /// Connected, it stops at `max_queued`
    /// (the broker queue then applies `slow_subscriber`); offline it drops
    /// the oldest pending messages instead, and QoS 0 messages are dropped. Returns true when a queue
    /// still holds messages and there is room to take them (offline there always is).
    pub fn pump(&self, shared: &Shared, st: &mut State) -> bool {
        let durable = Session::durable(shared, st);
        let online = st.conn.is_some();
        let cap = shared.config.max_queued;
        let mut journal = Vec::new();
        let mut batches = Vec::new();
        let State {
            subs,
            pending,
            next_seq,
            ..
        } = st;
        let mut more = false;
        let mut dropped = 0u64;
        let mut expired = 0u64;
        let mut cut_off = false;
        for entry in subs.values_mut() {
            if entry.sub.queue().closed().is_some() {
                // The broker cut this subscription off (its slow-consumer policy) and
                // discarded what it held. The session keeps the subscription: a new one
                // takes its place, and an attached client, which did not keep up, is told.
                tracing::warn!(client = %self.client_id, filter = %entry.rec.key, "subscription cut off as a slow consumer; messages were dropped");
                match shared.broker_subscribe(self, &entry.rec) {
                    Ok(sub) => {
                        let old = std::mem::replace(&mut entry.sub, sub);
                        shared.broker.unsubscribe(&old);
                    }
                    Err(e) => {
                        tracing::error!(client = %self.client_id, error = %e, "cannot subscribe again")
                    }
                }
                cut_off |= online;
            }
        }
        // A journaled batch no one holds any more was dropped by its queue (the slow-consumer
        // policy, a cut-off): its messages are gone, from the journal too. Every
        // subscription, also when the session is full and takes nothing.
        for entry in subs.values_mut() {
            entry.persisted.retain(|p| {
                if p.batch.strong_count() > 0 {
                    return true;
                }
                for k in p.recs.iter().flatten() {
                    frame_del(&self.client_id, k.seq, &mut journal);
                }
                false
            });
        }
        for entry in subs.values_mut() {
            if online && pending.len() >= cap {
                break;
            }
            let queue = entry.sub.queue().clone();
            let drained = queue.drain(&mut batches, DRAIN_BUDGET);
            if drained.dropped > 0 {
                tracing::debug!(client = %self.client_id, dropped = drained.dropped, "subscription queue dropped messages");
            }
            for b in batches.drain(..) {
                let kept = take_persisted(&mut entry.persisted, &b);
                for (i, rec) in b.records.iter_ref().enumerate() {
                    let msg = Message::in_batch(&b, rec);
                    let kept = kept
                        .as_ref()
                        .and_then(|k| k.get(i))
                        .and_then(Option::as_ref);
                    if msg.expired(msg.expiry_clock()) {
                        if let Some(k) = kept {
                            frame_del(&self.client_id, k.seq, &mut journal);
                        }
                        expired += 1;
                        continue; // [MQTT-3.3.2-5]
                    }
                    let (seq, qos, retain, sub_id) = match kept {
                        Some(k) => (k.seq, k.qos, k.retain, k.sub_id),
                        None => {
                            let qos = msg.qos.min(qos_of(entry.rec.qos));
                            if qos == QoS::AtMostOnce && !online {
                                continue;
                            }
                            let seq = *next_seq;
                            *next_seq += 1;
                            let retain = entry.rec.retain_as_published && msg.retain;
                            (seq, qos, retain, entry.rec.sub_id)
                        }
                    };
                    let sub_ids: Vec<u32> = sub_id.into_iter().collect();
                    if !online && pending.len() >= cap {
                        // Offline and full: keep the newest messages.
                        if let Some(old) = pending.pop_front() {
                            dropped += 1;
                            if durable && old.qos != QoS::AtMostOnce {
                                frame_del(&self.client_id, old.seq, &mut journal);
                            }
                        }
                    }
                    if durable && qos != QoS::AtMostOnce && kept.is_none() {
                        Entry::MsgPut {
                            client: &self.client_id,
                            seq,
                            qos: qos as u8,
                            retain,
                            sub_ids: &sub_ids,
                            msg: &msg,
                        }
                        .frame_into(&mut journal);
                    }
                    pending.push_back(Outgoing {
                        seq,
                        msg,
                        qos,
                        retain,
                        sub_ids,
                        pkid: 0,
                        released: false,
                        resend: false,
                    });
                }
            }
            more |= !queue.is_empty();
        }
        // Offline there is always room: the oldest messages go.
        let room = !online || pending.len() < cap;
        // A failure is counted: acknowledgements waiting meanwhile are withheld (see
        // `Shared::journal_failures`).
        if !journal.is_empty() {
            let _ = self.write(shared, st, &journal, Write::Counted);
        }
        st.cut_off |= cut_off;
        if dropped > 0 {
            // Warned about (rate-limited, for all sessions) where it is counted, below.
            tracing::debug!(client = %self.client_id, dropped, "session full: oldest messages dropped");
        }
        let stats = shared.broker.stats();
        stats.add_dropped(fogline_broker::DropReason::SessionFull, dropped);
        stats.add_dropped(fogline_broker::DropReason::Expired, expired);
        more && room
    }

    /// Journals the QoS 1/2 messages of `b`, which the broker is routing to this durable
    /// session's subscription `key`, before its publisher is acknowledged: they may wait in
    /// the subscription's queue for long (the session holds `max_queued` messages and its
    /// client is slow), and a crash must not lose them. [`Session::pump`] takes them from
    /// the queue later with the sequence numbers given here.
    ///
    /// # Errors
    /// The journal did not take them (the failure is counted, see [`Write::Counted`]); they
    /// are kept all the same, and the next whole-session write holds them.
    pub fn persist(
        &self,
        shared: &Shared,
        st: &mut State,
        (key, sub): (&str, u64),
        b: &Arc<Batch>,
    ) -> Result<(), StoreError> {
        if st.ended || !Session::durable(shared, st) {
            return Ok(());
        }
        let Some(entry) = st.subs.get_mut(key).filter(|e| e.sub.id() == sub) else {
            return Ok(()); // unsubscribed or replaced meanwhile: its queue goes with it
        };
        let mut j = Vec::new();
        let mut recs = Vec::with_capacity(b.count() as usize);
        let mut seq = st.next_seq;
        for rec in b.records.iter_ref() {
            let msg = Message::in_batch(b, rec);
            let qos = msg.qos.min(qos_of(entry.rec.qos));
            if qos == QoS::AtMostOnce || msg.expired(msg.expiry_clock()) {
                recs.push(None);
                continue;
            }
            let retain = entry.rec.retain_as_published && msg.retain;
            let sub_id = entry.rec.sub_id;
            Entry::MsgPut {
                client: &self.client_id,
                seq,
                qos: qos as u8,
                retain,
                sub_ids: sub_id.as_slice(),
                msg: &msg,
            }
            .frame_into(&mut j);
            recs.push(Some(Kept {
                seq,
                qos,
                retain,
                sub_id,
                msg,
            }));
            seq += 1;
        }
        if j.is_empty() {
            return Ok(());
        }
        // Kept before its entries are written: a whole-session write (`resync`) holds it.
        entry.persisted.push_back(Persisted {
            batch: Arc::downgrade(b),
            recs,
        });
        st.next_seq = seq;
        self.write(shared, st, &j, Write::Counted)
    }

    /// Journals that the messages of `entry`, a subscription the session dropped, that were
    /// journaled as routed ([`Session::persist`]) are gone with its queue.
    pub fn forget_persisted(&self, shared: &Shared, st: &mut State, entry: &SubEntry) {
        if entry.persisted.is_empty() || !Session::durable(shared, st) {
            return;
        }
        let mut j = Vec::new();
        for k in entry.persisted.iter().flat_map(|p| p.recs.iter().flatten()) {
            frame_del(&self.client_id, k.seq, &mut j);
        }
        // Lost, a restart delivers them once more.
        let _ = self.write(shared, st, &j, Write::BestEffort);
    }

    /// Queues a message (a retained one on subscribe) for delivery; false, and nothing
    /// queued, when the session already holds `max_queued` messages (many SUBSCRIBEs
    /// matching many retained messages would otherwise queue without bound).
    pub fn enqueue(
        &self,
        shared: &Shared,
        st: &mut State,
        msg: Message,
        qos: QoS,
        sub_id: Option<u32>,
    ) -> bool {
        if st.pending.len() >= shared.config.max_queued {
            return false;
        }
        let seq = st.next_seq;
        st.next_seq += 1;
        let sub_ids: Vec<u32> = sub_id.into_iter().collect();
        let mut j = Vec::new();
        if Session::durable(shared, st) && qos != QoS::AtMostOnce {
            Entry::MsgPut {
                client: &self.client_id,
                seq,
                qos: qos as u8,
                retain: true,
                sub_ids: &sub_ids,
                msg: &msg,
            }
            .frame_into(&mut j);
        }
        // Queued before its entry is written: a whole-session write (`resync`) then holds it.
        st.pending.push_back(Outgoing {
            seq,
            msg,
            qos,
            retain: true,
            sub_ids,
            pkid: 0,
            released: false,
            resend: false,
        });
        if !j.is_empty() {
            // A failure is counted: the SUBACK that queued it is withheld.
            let _ = self.write(shared, st, &j, Write::Counted);
        }
        true
    }

    /// Journals the session's subscriptions and expiry (durable), or its
    /// removal (no longer durable).
    ///
    /// # Errors
    /// The journal could not take it: what the caller would acknowledge is not durable.
    pub fn journal_session(&self, shared: &Shared, st: &mut State) -> Result<(), StoreError> {
        if shared.store.is_none() {
            return Ok(());
        }
        let mut j = Vec::new();
        if Session::durable(shared, st) {
            if shared.durable.lock().insert(self.client_id.clone()) {
                // What it holds was never journaled, and the journal may still hold an
                // older state of it (an end that was not written).
                st.resync = true;
            }
            self.frame_record(st, &mut j);
            return self.write(shared, st, &j, Write::Required);
        }
        // Nothing of it is journaled any more: its queued batches are plain again.
        for entry in st.subs.values_mut() {
            entry.persisted.clear();
        }
        // Only what the journal may hold needs an end there.
        if !shared.durable.lock().remove(&self.client_id) && !st.resync {
            return Ok(());
        }
        Entry::SessionDel(&self.client_id).frame_into(&mut j);
        let written = shared.journal(&j);
        match written {
            Ok(()) => {
                st.resync = false;
                shared.clear_stale(&self.client_id);
            }
            Err(_) => st.resync = true,
        }
        written
    }

    /// Appends entries of this session, which the caller has already applied to `st`.
    /// A failed counted or required write leaves memory ahead of the journal, so it sets
    /// `st.resync`; while that is set, such a write replaces the whole session instead
    /// (which records what `framed` does), at most once per [`RESYNC_BACKOFF`] (a whole
    /// session is large, and a full disk fails it until room comes back), and a best-effort
    /// write waits for it.
    ///
    /// # Errors
    /// The journal could not take it (logged), or a whole write failed less than
    /// [`RESYNC_BACKOFF`] ago.
    pub fn write(
        &self,
        shared: &Shared,
        st: &mut State,
        framed: &[u8],
        how: Write,
    ) -> Result<(), StoreError> {
        let append = |j: &[u8]| match how {
            Write::Counted => shared.journal_counted(j),
            Write::Required | Write::BestEffort => shared.journal(j),
        };
        if !st.resync {
            let written = append(framed);
            if written.is_err() && how != Write::BestEffort {
                st.resync = true;
            }
            return written;
        }
        if how == Write::BestEffort {
            return Ok(());
        }
        let now = std::time::Instant::now();
        if st.resync_after.is_some_and(|t| now < t) {
            if how == Write::Counted {
                shared.count_failure();
            }
            return Err(StoreError::Deferred);
        }
        let mut j = Vec::new();
        Entry::SessionDel(&self.client_id).frame_into(&mut j);
        self.frame_all(st, &mut j);
        if let Err(e) = append(&j) {
            st.resync_after = Some(now + RESYNC_BACKOFF);
            return Err(e);
        }
        st.resync = false;
        st.resync_after = None;
        shared.clear_stale(&self.client_id);
        Ok(())
    }

    /// Frames everything the session holds: its record, its QoS 1/2 messages (with their
    /// packet ids and releases; also those still in its queues that were journaled as
    /// routed) and its unreleased incoming QoS 2 ids.
    pub fn frame_all(&self, st: &State, out: &mut Vec<u8>) {
        let client = self.client_id.as_str();
        self.frame_record(st, out);
        for o in st.inflight.iter().chain(st.pending.iter()) {
            if o.qos == QoS::AtMostOnce {
                continue;
            }
            Entry::MsgPut {
                client,
                seq: o.seq,
                qos: o.qos as u8,
                retain: o.retain,
                sub_ids: &o.sub_ids,
                msg: &o.msg,
            }
            .frame_into(out);
            if o.pkid != 0 {
                Entry::MsgSent {
                    client,
                    seq: o.seq,
                    pkid: o.pkid,
                }
                .frame_into(out);
            }
            if o.released {
                Entry::MsgRel { client, seq: o.seq }.frame_into(out);
            }
        }
        for p in st.subs.values().flat_map(|e| e.persisted.iter()) {
            for k in p.recs.iter().flatten() {
                Entry::MsgPut {
                    client,
                    seq: k.seq,
                    qos: k.qos as u8,
                    retain: k.retain,
                    sub_ids: k.sub_id.as_slice(),
                    msg: &k.msg,
                }
                .frame_into(out);
            }
        }
        for &pkid in &st.qos2_in {
            Entry::Qos2In { client, pkid }.frame_into(out);
        }
    }

    /// Frames the session's record (subscriptions and expiry) into `out`.
    pub fn frame_record(&self, st: &State, out: &mut Vec<u8>) {
        let subs = st.sub_records();
        Entry::SessionPut {
            client: &self.client_id,
            expiry: st.expiry,
            subs: &subs,
            owner: self.owner.as_deref(),
        }
        .frame_into(out);
    }

    /// Journals that message `seq` is done with: acknowledged, refused, or dropped as if
    /// delivered. Not written, a restart delivers it again (at least once still holds).
    pub fn journal_done(&self, shared: &Shared, st: &mut State, seq: u64) {
        let done = Entry::MsgDel {
            client: &self.client_id,
            seq,
        };
        let _ = self.journal(shared, st, done, Write::BestEffort);
    }

    /// Journals one entry when the session is durable (see [`Session::write`]).
    ///
    /// # Errors
    /// The journal could not take it (logged).
    pub fn journal(
        &self,
        shared: &Shared,
        st: &mut State,
        e: Entry<'_>,
        how: Write,
    ) -> Result<(), StoreError> {
        if !Session::durable(shared, st) {
            return Ok(());
        }
        let mut j = Vec::new();
        e.frame_into(&mut j);
        self.write(shared, st, &j, how)
    }
}

/// QoS from its number, capped at 2.
pub(crate) fn qos_of(v: u8) -> QoS {
    QoS::from_u8(v.min(2)).unwrap_or(QoS::ExactlyOnce)
}

/// Takes the record of `b` from `persisted`, if it was journaled as routed: how each of its
/// messages was journaled.
fn take_persisted(
    persisted: &mut VecDeque<Persisted>,
    b: &Arc<Batch>,
) -> Option<Vec<Option<Kept>>> {
    let at = persisted
        .iter()
        .position(|p| std::ptr::eq(p.batch.as_ptr(), Arc::as_ptr(b)))?;
    persisted.remove(at).map(|p| p.recs)
}

/// Frames a MsgDel entry: message `seq` of `client` is gone.
fn frame_del(client: &str, seq: u64, out: &mut Vec<u8>) {
    Entry::MsgDel { client, seq }.frame_into(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packet-id bitmap is allocated by the first id taken, not by every session.
    #[test]
    fn packet_ids_cost_nothing_until_one_is_taken() {
        let mut st = State::new(0);
        assert!(!st.pkid_used(1));
        st.mark_pkid(7, false);
        assert_eq!(st.used.capacity(), 0, "freeing an id allocates nothing");
        let a = st.alloc_pkid();
        let b = st.alloc_pkid();
        assert_eq!((a, b), (1, 2));
        assert!(st.pkid_used(1) && st.pkid_used(2) && !st.pkid_used(3));
        st.mark_pkid(1, false);
        assert!(!st.pkid_used(1));
        // Ids wrap around past those in use, and 0 is never one.
        st.mark_pkid(u16::MAX, true);
        st.next_pkid = u16::MAX - 1;
        assert_eq!(st.alloc_pkid(), 1);
    }
}
