//! R-Pulsar's `notify_interest` (paper 004, section IV-D1): a producer registers its data
//! profile (and the topic it would publish on) and sends nothing until somebody is
//! interested; it is told to start when the first matching interest appears and to stop
//! when the last one goes (R-Pulsar's NOTIFY_START and NOTIFY_STOP).
//!
//! [`Rendezvous`] keeps, for every producer, the interests that match it, and for every
//! interest the producers it matched. Matching is the caller's: a new producer comes with
//! the interests matching it (found through the caller's indexes: an [`InterestIndex`] for
//! profiles, the broker's topic trie for plain subscriptions), and a new interest is checked
//! against every producer with the caller's predicate (producers are the few sensors of a
//! site, interests may be many). Removing an interest costs what it matched.
//!
//! [`InterestIndex`]: crate::InterestIndex

use std::collections::{BTreeSet, HashMap};

use crate::index::InterestId;
use crate::model::DataProfile;

/// A registered producer.
pub type ProducerId = u64;

/// What a producer is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Notice {
    /// Somebody is interested now: start sending.
    Start(ProducerId),
    /// Nobody is interested any more: stop sending.
    Stop(ProducerId),
}

struct Producer {
    profile: DataProfile,
    topic: String,
    /// The interests matching it.
    interests: BTreeSet<InterestId>,
}

/// Producers waiting for interest, and the interests that wake them.
#[derive(Default)]
pub struct Rendezvous {
    /// Every registered interest, with the producers it matched.
    interests: HashMap<InterestId, Vec<ProducerId>>,
    producers: HashMap<ProducerId, Producer>,
}

impl Rendezvous {
    /// An empty rendezvous point.
    pub fn new() -> Rendezvous {
        Rendezvous::default()
    }

    /// Registers (or replaces) a producer publishing `profile` on `topic`; `matched` are the
    /// registered interests that match it (others are ignored). True when somebody is
    /// interested already (it may start at once; no notice is given for it).
    pub fn add_producer(
        &mut self,
        id: ProducerId,
        profile: DataProfile,
        topic: &str,
        matched: impl IntoIterator<Item = InterestId>,
    ) -> bool {
        self.remove_producer(id);
        let mut interests = BTreeSet::new();
        for i in matched {
            if let Some(producers) = self.interests.get_mut(&i) {
                if interests.insert(i) {
                    producers.push(id);
                }
            }
        }
        let interested = !interests.is_empty();
        self.producers.insert(
            id,
            Producer {
                profile,
                topic: topic.to_string(),
                interests,
            },
        );
        interested
    }

    /// Forgets a producer (no notice: it is gone); false when it was not registered.
    pub fn remove_producer(&mut self, id: ProducerId) -> bool {
        let Some(p) = self.producers.remove(&id) else {
            return false;
        };
        for i in p.interests {
            if let Some(producers) = self.interests.get_mut(&i) {
                producers.retain(|&x| x != id);
            }
        }
        true
    }

    /// Adds (or replaces) an interest that holds for the producers for which
    /// `matches(profile, topic)` is true: `Start` for every producer nobody wanted before
    /// (and, when it replaces one, `Stop` for those only the old one wanted).
    pub fn add_interest(
        &mut self,
        id: InterestId,
        matches: impl Fn(&DataProfile, &str) -> bool,
    ) -> Vec<Notice> {
        let mut notices = self.remove_interest(id);
        let mut matched = Vec::new();
        for (&pid, p) in &mut self.producers {
            if matches(&p.profile, &p.topic) {
                if p.interests.is_empty() {
                    notices.push(Notice::Start(pid));
                }
                p.interests.insert(id);
                matched.push(pid);
            }
        }
        self.interests.insert(id, matched);
        settle(notices)
    }

    /// Removes an interest: `Stop` for every producer it was the last to want.
    pub fn remove_interest(&mut self, id: InterestId) -> Vec<Notice> {
        let Some(matched) = self.interests.remove(&id) else {
            return Vec::new();
        };
        let mut notices = Vec::new();
        for pid in matched {
            if let Some(p) = self.producers.get_mut(&pid) {
                if p.interests.remove(&id) && p.interests.is_empty() {
                    notices.push(Notice::Stop(pid));
                }
            }
        }
        notices.sort_unstable();
        notices
    }

    /// Whether somebody is interested in the producer.
    pub fn interested(&self, id: ProducerId) -> bool {
        self.producers
            .get(&id)
            .is_some_and(|p| !p.interests.is_empty())
    }

    /// The interests matching a producer now (empty for an unknown one).
    pub fn interests_of(&self, id: ProducerId) -> impl Iterator<Item = InterestId> + '_ {
        self.producers
            .get(&id)
            .into_iter()
            .flat_map(|p| p.interests.iter().copied())
    }

    /// Producers waiting for interest (for the dashboard), in id order.
    pub fn waiting(&self) -> Vec<ProducerId> {
        let mut v: Vec<ProducerId> = self
            .producers
            .iter()
            .filter(|(_, p)| p.interests.is_empty())
            .map(|(&id, _)| id)
            .collect();
        v.sort_unstable();
        v
    }

    /// Each producer's profile, topic and whether somebody is interested, in id order.
    pub fn producers(&self) -> Vec<(ProducerId, &DataProfile, &str, bool)> {
        let mut v: Vec<_> = self
            .producers
            .iter()
            .map(|(&id, p)| (id, &p.profile, p.topic.as_str(), !p.interests.is_empty()))
            .collect();
        v.sort_unstable_by_key(|p| p.0);
        v
    }

    /// Interests registered.
    pub fn interest_count(&self) -> usize {
        self.interests.len()
    }

    /// Producers registered.
    pub fn producer_count(&self) -> usize {
        self.producers.len()
    }
}

/// A replacement's `Stop` and `Start` for one producer cancel out: it goes on sending.
fn settle(mut notices: Vec<Notice>) -> Vec<Notice> {
    let stopped: BTreeSet<ProducerId> = notices
        .iter()
        .filter_map(|n| match n {
            Notice::Stop(p) => Some(*p),
            Notice::Start(_) => None,
        })
        .collect();
    let restarted: BTreeSet<ProducerId> = notices
        .iter()
        .filter_map(|n| match n {
            Notice::Start(p) if stopped.contains(p) => Some(*p),
            _ => None,
        })
        .collect();
    notices.retain(|n| match n {
        Notice::Start(p) | Notice::Stop(p) => !restarted.contains(p),
    });
    notices.sort_unstable();
    notices
}
