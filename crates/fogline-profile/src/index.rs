//! Matching one data profile against many interests without scanning them all.
//!
//! The counting algorithm of content-based publish/subscribe: every term of every interest
//! is filed under its attribute in a structure suited to its predicate (hash map for exact
//! keywords, hash maps of prefixes and suffixes probed with the value's own prefixes and
//! suffixes, patterns grouped by their literal head, a treap of ranges, a multi-level
//! geo grid). A data profile probes, per attribute, the structures for the terms its value
//! satisfies and counts them per interest; an interest matches when its count reaches its
//! number of terms. The work grows with the number of satisfied terms, not with the number
//! of interests. Interests without terms match every profile (subject to their topic).
//!
//! Cost of matching one attribute value `v` (k = the terms it satisfies):
//! - present, exact: one hash lookup, then k;
//! - prefix, suffix: one hash lookup per prefix (suffix) of `v` up to the longest key;
//! - wildcard: patterns are filed under their literal head (before the first `*` or `?`),
//!   one lookup per prefix of `v`; every pattern whose head is a prefix of `v` is checked
//!   directly, O(|pattern| x |v|) each, so patterns opening with `*` are all checked;
//! - range: a stabbing query on a treap by low bound, O(k log n) expected;
//! - geo box and radius: one grid lookup per occupied level (at most 21), then an exact check
//!   of each shape in that cell (shapes cover at most 4 cells at their level, so the cell holds
//!   few that miss); shapes with no safe bounding box (a radius centred off the earth's
//!   ranges) are checked for every point.
//!
//! Then each interest whose count reached its terms is checked against the topic filter.
//! Insert and remove touch only the interest's own terms (removal searches the owner lists
//! of its keys, linear in each list).

mod attr;
mod geo;
mod range;

use std::cell::RefCell;
use std::collections::HashMap;

use crate::model::{DataProfile, Interest};
use attr::AttrIndex;

pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The caller's name for an interest.
pub type InterestId = u64;

/// A registered interest, at its internal slot.
struct Slot {
    id: InterestId,
    interest: Interest,
}

/// Interests indexed for matching by data profile. See the [module docs](self).
#[derive(Default)]
pub struct InterestIndex {
    slots: Vec<Option<Slot>>,
    /// Per slot, the number of terms to satisfy (`u32::MAX` for a free slot).
    need: Vec<u32>,
    free: Vec<u32>,
    by_id: FastMap<InterestId, u32>,
    attrs: FastMap<String, AttrIndex>,
    /// Slots of interests without terms.
    no_terms: Vec<u32>,
}

thread_local! {
    // Counters per slot and the slots touched: per thread, so `matches` takes `&self` and
    // the index stays `Sync`; the counters are zeroed again after each call.
    static SCRATCH: RefCell<(Vec<u32>, Vec<u32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

impl InterestIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `interest` under `id`, replacing the interest of the same id.
    pub fn insert(&mut self, id: InterestId, interest: &Interest) {
        self.remove(id);
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.need.push(u32::MAX);
                (self.slots.len() - 1) as u32
            }
        };
        for (t, term) in interest.terms.iter().enumerate() {
            let a = self.attrs.entry(term.attribute.clone()).or_default();
            a.insert(&term.predicate, slot, t as u32);
        }
        if interest.terms.is_empty() {
            self.no_terms.push(slot);
        }
        self.need[slot as usize] = interest.terms.len() as u32;
        self.slots[slot as usize] = Some(Slot {
            id,
            interest: interest.clone(),
        });
        self.by_id.insert(id, slot);
    }

    /// Removes the interest `id`; false when there is none.
    pub fn remove(&mut self, id: InterestId) -> bool {
        let Some(slot) = self.by_id.remove(&id) else {
            return false;
        };
        let s = self.slots[slot as usize].take().expect("an occupied slot");
        for (t, term) in s.interest.terms.iter().enumerate() {
            let a = self
                .attrs
                .get_mut(&term.attribute)
                .expect("an indexed attribute");
            a.remove(&term.predicate, slot, t as u32);
            if a.is_empty() {
                self.attrs.remove(&term.attribute);
            }
        }
        if s.interest.terms.is_empty() {
            let i = self
                .no_terms
                .iter()
                .position(|&x| x == slot)
                .expect("listed");
            self.no_terms.swap_remove(i);
        }
        self.need[slot as usize] = u32::MAX;
        self.free.push(slot);
        true
    }

    /// The number of interests.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether there are no interests.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    fn topic_ok(&self, slot: u32, topic: &str) -> bool {
        let s = self.slots[slot as usize]
            .as_ref()
            .expect("an occupied slot");
        s.interest
            .topic
            .as_deref()
            .is_none_or(|f| fogline_wire::filter_matches(f, topic))
    }

    /// Counts satisfied terms per slot; `done(slot)` is called when a slot's last term is
    /// satisfied and stops the walk by returning true. Returns whether it was stopped.
    /// `pairs` as a profile holds them (`String`s) or borrowed (`&str`), so neither is copied.
    fn count<A: AsRef<str>, V: AsRef<str>>(
        &self,
        pairs: &[(A, Option<V>)],
        done: &mut impl FnMut(u32) -> bool,
    ) -> bool {
        SCRATCH.with(|cell| {
            let (counts, touched) = &mut *cell.borrow_mut();
            if counts.len() < self.slots.len() {
                counts.resize(self.slots.len(), 0);
            }
            let mut stopped = false;
            for (i, (name, value)) in pairs.iter().enumerate() {
                let name = name.as_ref();
                // An attribute counts once: `DataProfile::get` reads its first occurrence.
                if stopped || pairs[..i].iter().any(|(a, _)| a.as_ref() == name) {
                    continue;
                }
                let Some(a) = self.attrs.get(name) else {
                    continue;
                };
                a.stab(value.as_ref().map(AsRef::as_ref), &mut |slot| {
                    // Holds 1 + the terms still to satisfy (0: untouched), so `need` is read
                    // once per touched slot rather than once per satisfied term.
                    let c = &mut counts[slot as usize];
                    if *c == 0 {
                        touched.push(slot);
                        *c = self.need[slot as usize];
                    } else {
                        *c -= 1;
                    }
                    if !stopped && *c == 1 {
                        stopped = done(slot);
                    }
                });
            }
            for &s in touched.iter() {
                counts[s as usize] = 0;
            }
            touched.clear();
            stopped
        })
    }

    /// Every interest whose terms all hold for `profile` and whose topic filter (if any)
    /// matches `topic`, each once, in ascending id order. Clears `out` first.
    pub fn matches(&self, profile: &DataProfile, topic: &str, out: &mut Vec<InterestId>) {
        self.matches_pairs(&profile.pairs, topic, out);
    }

    /// [`matches`](Self::matches) for a profile given as pairs, owned or borrowed: as
    /// [`carried_pairs`](crate::carried_pairs) reads them from a record's headers, routing a
    /// record copies nothing of its profile.
    pub fn matches_pairs<A: AsRef<str>, V: AsRef<str>>(
        &self,
        pairs: &[(A, Option<V>)],
        topic: &str,
        out: &mut Vec<InterestId>,
    ) {
        out.clear();
        let mut push = |slot: u32| {
            if self.topic_ok(slot, topic) {
                out.push(self.slots[slot as usize].as_ref().expect("occupied").id);
            }
        };
        self.no_terms.iter().for_each(|&s| push(s));
        self.count(pairs, &mut |slot| {
            push(slot);
            false
        });
        out.sort_unstable();
    }

    /// Whether any interest matches (as [`matches`](Self::matches)), stopping at the first.
    pub fn any_match(&self, profile: &DataProfile, topic: &str) -> bool {
        self.no_terms.iter().any(|&s| self.topic_ok(s, topic))
            || self.count(&profile.pairs, &mut |slot| self.topic_ok(slot, topic))
    }

    /// Approximate heap memory held, in bytes (not counting the per-thread counters, 8 bytes
    /// per slot on each thread that matched).
    pub fn heap_bytes(&self) -> usize {
        let interest = |i: &Interest| {
            i.topic.as_ref().map_or(0, String::capacity)
                + i.terms.capacity() * std::mem::size_of::<crate::model::Term>()
                + i.terms
                    .iter()
                    .map(|t| t.attribute.capacity() + pred_bytes(&t.predicate))
                    .sum::<usize>()
        };
        self.slots.capacity() * std::mem::size_of::<Option<Slot>>()
            + self
                .slots
                .iter()
                .flatten()
                .map(|s| interest(&s.interest))
                .sum::<usize>()
            + (self.need.capacity() + self.free.capacity() + self.no_terms.capacity()) * 4
            + self.by_id.capacity() * 13
            + self.attrs.capacity() * (std::mem::size_of::<(String, AttrIndex)>() + 1)
            + self
                .attrs
                .iter()
                .map(|(k, a)| k.capacity() + a.heap_bytes())
                .sum::<usize>()
    }
}

fn pred_bytes(p: &crate::model::Predicate) -> usize {
    use crate::model::Predicate as P;
    match p {
        P::Exact(s) | P::Prefix(s) | P::Suffix(s) | P::Wildcard(s) => s.capacity(),
        _ => 0,
    }
}
