//! Associative Rendezvous in the broker (paper 004, section IV-D1; `docs/PROFILES.md`).
//!
//! **Routing by content.** A subscription may carry an interest profile
//! ([`SubscribeOptions::interest`](crate::SubscribeOptions)): it then gets the records whose
//! data profile (their headers, see `fogline_profile::DataProfile::from_headers`) satisfies
//! the interest, on topics its filter matches. Such subscriptions are kept in an
//! [`InterestIndex`] rather than the topic trie; while there are any, each published batch's
//! records are matched through the index (the work grows with the terms a record satisfies,
//! not with the number of interests), and a subscriber wanting only some of a batch's records
//! is queued a batch of just those. An interest without terms is a plain subscription.
//!
//! **notify_interest.** A producer announces the profile and topic it would publish
//! ([`Broker::announce`]); it is told, through its [`Announcement`], whenever somebody
//! starts or stops being interested: any subscription whose filter matches the topic and
//! whose interest (if any) matches the profile. The bookkeeping is
//! `fogline_profile::rendezvous::Rendezvous`, fed by the trie and the index.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use fogline_profile::rendezvous::{Notice, ProducerId, Rendezvous};
use fogline_profile::{carried_pairs_counted, DataProfile, Interest, InterestIndex};
use fogline_wire::RecordBlock;
use tokio::sync::watch;

use crate::batch::Batch;
use crate::broker::{Broker, Subscription};
use crate::error::BrokerError;

/// The broker's profile state, kept with the subscriptions (under their lock).
#[derive(Default)]
pub(crate) struct Profiles {
    /// Subscriptions with an interest, by subscription id (the interest's topic is the
    /// subscription's filter).
    pub(crate) index: InterestIndex,
    pub(crate) rendezvous: Rendezvous,
    watchers: HashMap<ProducerId, Producer>,
}

struct Producer {
    tx: watch::Sender<bool>,
    owner: u64,
}

impl Profiles {
    /// Registers subscription `sub` with the rendezvous (and the index when it has an
    /// interest), telling producers that now have somebody interested.
    pub(crate) fn add(&mut self, sub: &Subscription) {
        let notices = match sub.interest() {
            Some(interest) => {
                self.index.insert(sub.id(), interest);
                self.rendezvous
                    .add_interest(sub.id(), |p, t| interest.matches(p, t))
            }
            None => {
                let filter = sub.filter();
                self.rendezvous
                    .add_interest(sub.id(), |_, t| fogline_wire::filter_matches(filter, t))
            }
        };
        self.tell(notices);
    }

    /// Forgets subscription `id`, telling producers nobody wants any more.
    pub(crate) fn remove(&mut self, id: u64, had_interest: bool) {
        if had_interest {
            self.index.remove(id);
        }
        let notices = self.rendezvous.remove_interest(id);
        self.tell(notices);
    }

    fn tell(&self, notices: Vec<Notice>) {
        for n in notices {
            let (id, on) = match n {
                Notice::Start(id) => (id, true),
                Notice::Stop(id) => (id, false),
            };
            if let Some(p) = self.watchers.get(&id) {
                p.tx.send_replace(on);
            }
        }
    }
}

/// A producer's registration (R-Pulsar's notify_interest): whether somebody is interested
/// in what it would publish, now and as it changes. Dropping it withdraws the registration.
pub struct Announcement {
    id: ProducerId,
    rx: watch::Receiver<bool>,
    broker: Broker,
}

impl Announcement {
    /// The registration's broker-wide id.
    pub fn id(&self) -> ProducerId {
        self.id
    }

    /// Whether somebody is interested now.
    pub fn interested(&self) -> bool {
        *self.rx.borrow()
    }

    /// Waits until that changes, and returns the new state. Changes in quick succession
    /// may be seen as one (the latest state always is).
    pub async fn changed(&mut self) -> bool {
        // The sender lives as long as the registration, which `self` holds.
        let _ = self.rx.changed().await;
        *self.rx.borrow_and_update()
    }
}

impl Drop for Announcement {
    fn drop(&mut self) {
        let mut subs = self.broker.inner.subs.write();
        subs.profiles.rendezvous.remove_producer(self.id);
        subs.profiles.watchers.remove(&self.id);
    }
}

/// A registered producer, for the admin API and the dashboard.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ProducerInfo {
    /// Its registration id.
    pub id: u64,
    /// The origin of the connection that registered it.
    pub origin: u64,
    /// The topic it would publish on.
    pub topic: String,
    /// Its data profile, in the text form.
    pub profile: String,
    /// Whether somebody is interested (it is sending) or not (it is waiting).
    pub interested: bool,
}

impl Broker {
    /// Registers a producer of `profile` on `topic` for `owner` (a connection's origin):
    /// see [`Announcement`].
    ///
    /// # Errors
    /// [`BrokerError::InvalidTopic`] for a topic that is not a valid topic name.
    pub fn announce(
        &self,
        topic: &str,
        profile: DataProfile,
        owner: u64,
    ) -> Result<Announcement, BrokerError> {
        fogline_wire::validate_topic(topic)
            .map_err(|e| BrokerError::InvalidTopic(e.to_string()))?;
        let id = self.next_origin();
        let mut subs = self.inner.subs.write();
        let mut matched = Vec::new();
        subs.trie.matches(topic, &mut matched);
        let mut profiled = Vec::new();
        subs.profiles.index.matches(&profile, topic, &mut profiled);
        matched.extend(profiled);
        let on = subs
            .profiles
            .rendezvous
            .add_producer(id, profile, topic, matched);
        let (tx, rx) = watch::channel(on);
        subs.profiles.watchers.insert(id, Producer { tx, owner });
        drop(subs);
        self.inner
            .stats
            .announcements
            .fetch_add(1, Ordering::Relaxed);
        Ok(Announcement {
            id,
            rx,
            broker: self.clone(),
        })
    }

    /// Registered producers, in id order.
    pub fn producers(&self) -> Vec<ProducerInfo> {
        let subs = self.inner.subs.read();
        let p = &subs.profiles;
        p.rendezvous
            .producers()
            .into_iter()
            .map(|(id, profile, topic, interested)| ProducerInfo {
                id,
                origin: p.watchers.get(&id).map_or(0, |w| w.owner),
                topic: topic.to_string(),
                profile: profile.to_string(),
                interested,
            })
            .collect()
    }

    /// Live subscriptions with an interest profile.
    pub fn interest_count(&self) -> usize {
        self.inner.subs.read().profiles.index.len()
    }

    /// The subscriptions with an interest that want records of `batch`, each with the batch
    /// to queue: `batch` itself when it wants all of it, else a batch of the records it
    /// wants. Empty at once when there are no such subscriptions.
    pub(crate) fn profiled_targets(
        &self,
        batch: &Arc<Batch>,
    ) -> Vec<(Arc<Subscription>, Arc<Batch>)> {
        if self.inner.profiled.load(Ordering::Relaxed) == 0 {
            return Vec::new();
        }
        let subs = self.inner.subs.read();
        let index = &subs.profiles.index;
        if index.is_empty() {
            return Vec::new();
        }
        let topic = batch.topic.as_str();
        let count = batch.count() as usize;
        // (subscription, record position) for every match, grouped by subscription below:
        // a sort, not a search per match (a record may match thousands of interests).
        let mut pairs: Vec<(u64, u32)> = Vec::new();
        let mut ids = Vec::new();
        let mut skipped = 0u64;
        // The profile read in place: copying each record's attributes and values out was a
        // fifth (1 attribute) to 30 % (6) of routing it to one interest (`fogline-bench
        // route`).
        let mut profile = Vec::with_capacity(16);
        for (i, record) in batch.records.iter_ref().enumerate() {
            if record.headers.is_empty() {
                continue; // no profile: only interests without terms, which are plain
            }
            let Ok(left_out) = carried_pairs_counted(record.headers, &mut profile) else {
                continue; // the front ends validate header blocks; nothing to match
            };
            skipped += (left_out.bad_names + left_out.binary_values) as u64;
            index.matches_pairs(&profile, topic, &mut ids);
            pairs.extend(ids.iter().map(|&id| (id, i as u32)));
        }
        if count > 1 {
            pairs.sort_unstable();
        }
        let mut out = Vec::new();
        let mut start = 0;
        while start < pairs.len() {
            let id = pairs[start].0;
            let end = start + pairs[start..].partition_point(|p| p.0 == id);
            let records = &pairs[start..end];
            start = end;
            let Some(sub) = subs.by_id.get(&id) else {
                continue;
            };
            if sub.no_local() && sub.origin() == batch.origin {
                continue;
            }
            // The ACL's read check (plain subscriptions have it in their routes).
            if sub
                .options()
                .reader
                .as_ref()
                .is_some_and(|r| !r.may_read(topic))
            {
                continue;
            }
            let part = if records.len() == count {
                batch.clone()
            } else {
                let positions: Vec<u32> = records.iter().map(|p| p.1).collect();
                match part_of(batch, &positions) {
                    Some(b) => Arc::new(b),
                    None => continue,
                }
            };
            out.push((sub.clone(), part));
        }
        drop(subs);
        let stats = &self.inner.stats;
        if skipped > 0 {
            stats.profile_skipped.fetch_add(skipped, Ordering::Relaxed);
        }
        let routed: u64 = out.iter().map(|(_, b)| u64::from(b.count())).sum();
        stats.profile_routed.fetch_add(routed, Ordering::Relaxed);
        out
    }
}

/// The records of `batch` at `positions` (ascending), as a batch of their own.
fn part_of(batch: &Batch, positions: &[u32]) -> Option<Batch> {
    let all: Vec<_> = batch.records.iter_ref().collect();
    let block = RecordBlock::from_records(positions.iter().map(|&i| {
        let r = all[i as usize];
        (r.timestamp, r.headers, r.payload)
    }))
    .ok()?;
    Some(Batch {
        topic: batch.topic.clone(),
        records: block,
        timestamp: batch.timestamp,
        priority: batch.priority,
        origin: batch.origin,
    })
}

/// The subscription's interest over the topics its filter matches.
pub(crate) fn with_filter(interest: &Interest, filter: &str) -> Interest {
    Interest {
        terms: interest.terms.clone(),
        topic: Some(filter.to_string()),
    }
}
