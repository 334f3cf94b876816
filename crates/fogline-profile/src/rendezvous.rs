//! R-Pulsar's `notify_interest` (paper 004, section IV-D1): a producer registers its data
//! profile (and the topic it would publish on) and sends nothing until somebody is
//! interested; it is told to start when the first matching interest appears and to stop
//! when the last one goes (R-Pulsar's NOTIFY_START and NOTIFY_STOP).
//!
//! [`Rendezvous`] keeps, for every producer, the interests that match it. A new producer
//! is matched through the [`InterestIndex`]; a new interest is checked against every
//! producer (producers are the few sensors of a site, interests may be many), and each
//! interest remembers the producers it matched, so removing one costs what it matched.

use std::collections::{BTreeSet, HashMap};

use crate::index::{InterestId, InterestIndex};
use crate::model::{DataProfile, Interest};

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
    index: InterestIndex,
    interests: HashMap<InterestId, (Interest, Vec<ProducerId>)>,
    producers: HashMap<ProducerId, Producer>,
}

impl Rendezvous {
    /// An empty rendezvous point.
    pub fn new() -> Rendezvous {
        Rendezvous::default()
    }

    /// Registers (or replaces) a producer; true when somebody is interested already (it
    /// may start at once; no notice is given for it).
    pub fn add_producer(&mut self, id: ProducerId, profile: DataProfile, topic: &str) -> bool {
        self.remove_producer(id);
        let mut matched = Vec::new();
        self.index.matches(&profile, topic, &mut matched);
        for i in &matched {
            if let Some((_, producers)) = self.interests.get_mut(i) {
                producers.push(id);
            }
        }
        let interested = !matched.is_empty();
        self.producers.insert(
            id,
            Producer {
                profile,
                topic: topic.to_string(),
                interests: matched.into_iter().collect(),
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
            if let Some((_, producers)) = self.interests.get_mut(&i) {
                producers.retain(|&x| x != id);
            }
        }
        true
    }

    /// Adds (or replaces) an interest: `Start` for every producer nobody wanted before
    /// (and, when it replaces one, `Stop` for those only the old one wanted).
    pub fn add_interest(&mut self, id: InterestId, interest: Interest) -> Vec<Notice> {
        let mut notices = self.remove_interest(id);
        let mut matched = Vec::new();
        for (&pid, p) in &mut self.producers {
            if interest.matches(&p.profile, &p.topic) {
                if p.interests.is_empty() {
                    notices.push(Notice::Start(pid));
                }
                p.interests.insert(id);
                matched.push(pid);
            }
        }
        self.index.insert(id, &interest);
        self.interests.insert(id, (interest, matched));
        settle(notices)
    }

    /// Removes an interest: `Stop` for every producer it was the last to want.
    pub fn remove_interest(&mut self, id: InterestId) -> Vec<Notice> {
        let Some((_, matched)) = self.interests.remove(&id) else {
            return Vec::new();
        };
        self.index.remove(id);
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
