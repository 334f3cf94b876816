//! Answering a [`Query`]: plan, candidates, checks, pages.
//!
//! Planning: exact and bare-attribute terms give their record list at once (one lookup).
//! Every other term is resolved to the attribute's distinct values it holds for (see
//! `attr`) unless a list found so far is already shorter than the attribute's count of
//! distinct values, in which case checking that list's records is cheaper than resolving.
//! The term with the fewest records (summed over its values' lists) drives: its lists,
//! merged in slot order and cut to the time range and the cursor, are the candidates. Each
//! candidate is then checked against the other terms through its compact profile: a value
//! id in the resolved set, or the reference predicate on the value's text, and against the
//! topic filter through the topic's interned id. A page stops at `limit + 1` hits, the last
//! one only telling that there is a next page.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use fogline_profile::{Interest, Predicate};

use crate::attr::BARE;
use crate::index::ProfileIndex;
use crate::{Hit, Page, Query};

/// How a term other than the driver is checked on a candidate.
enum Check<'a> {
    /// The record has the attribute (with or without a value).
    Present(u32),
    /// The record's value of the attribute is one of these ids (sorted).
    In(u32, Vec<u32>),
    /// The record has the attribute and the reference predicate holds for its value.
    Holds(u32, &'a Predicate),
}

/// A term resolved to record lists.
struct Resolved<'a> {
    lists: Vec<&'a [u32]>,
    records: usize,
    check: Check<'a>,
}

/// What a query does: the candidates' lists (`None`: every record) and what to check.
struct Plan<'a> {
    driver: Option<Vec<&'a [u32]>>,
    checks: Vec<Check<'a>>,
    /// Per topic id, whether the topic filter matches it (`None`: no filter).
    topics: Option<Vec<bool>>,
}

impl ProfileIndex {
    /// The plan for `interest`; `None` when no record can match it.
    fn plan<'a>(&'a self, interest: &'a Interest) -> Option<Plan<'a>> {
        let mut resolved = Vec::new();
        let mut deferred = Vec::new();
        for term in &interest.terms {
            let attr = *self.attr_ids.get(term.attribute.as_str())?;
            let a = &self.attrs[attr as usize];
            match &term.predicate {
                Predicate::Present => resolved.push(Resolved {
                    lists: vec![&a.present[..]],
                    records: a.present.len(),
                    check: Check::Present(attr),
                }),
                Predicate::Exact(text) => {
                    let id = a.exact(text)?;
                    let slots = &a.values[id as usize].slots;
                    resolved.push(Resolved {
                        lists: vec![&slots[..]],
                        records: slots.len(),
                        check: Check::In(attr, vec![id]),
                    });
                }
                p => deferred.push((attr, p)),
            }
        }
        let mut best = resolved.iter().map(|r| r.records).min();
        let mut checks = Vec::new();
        for (attr, p) in deferred {
            let a = &self.attrs[attr as usize];
            if best.is_some_and(|b| b <= a.values.len()) {
                checks.push(Check::Holds(attr, p));
                continue;
            }
            let mut ids = a.resolve(p);
            if ids.is_empty() {
                return None;
            }
            ids.sort_unstable();
            let lists: Vec<&[u32]> = ids
                .iter()
                .map(|&id| &a.values[id as usize].slots[..])
                .collect();
            let records = lists.iter().map(|l| l.len()).sum();
            best = Some(best.map_or(records, |b| b.min(records)));
            resolved.push(Resolved {
                lists,
                records,
                check: Check::In(attr, ids),
            });
        }
        let driver = (0..resolved.len()).min_by_key(|&i| resolved[i].records);
        let driver = driver.map(|i| resolved.swap_remove(i).lists);
        checks.extend(resolved.into_iter().map(|r| r.check));
        let topics = match &interest.topic {
            None => None,
            Some(filter) => {
                let ok: Vec<bool> = self
                    .topics
                    .iter()
                    .map(|t| fogline_wire::filter_matches(filter, t))
                    .collect();
                if !ok.contains(&true) {
                    return None;
                }
                Some(ok)
            }
        };
        Some(Plan {
            driver,
            checks,
            topics,
        })
    }

    /// Whether the record in `slot` (a candidate) is live and passes the plan's checks.
    fn accepts(&self, plan: &Plan<'_>, slot: u32) -> bool {
        let rec = &self.rec;
        if rec.is_dead(slot) {
            return false;
        }
        if let Some(ok) = &plan.topics {
            if !ok[rec.topics[slot as usize] as usize] {
                return false;
            }
        }
        plan.checks.iter().all(|c| match c {
            Check::Present(attr) => rec.value_of(slot, *attr).is_some(),
            Check::In(attr, ids) => rec
                .value_of(slot, *attr)
                .is_some_and(|v| ids.binary_search(&v).is_ok()),
            Check::Holds(attr, p) => rec.value_of(slot, *attr).is_some_and(|v| {
                let a = &self.attrs[*attr as usize];
                p.holds((v != BARE).then(|| a.text(v)))
            }),
        })
    }

    /// The slots `lo..hi` of the plan's candidates, ascending or (`rev`) descending.
    fn candidates<'a>(
        &self,
        plan: &Plan<'a>,
        lo: u32,
        hi: u32,
        rev: bool,
    ) -> Box<dyn Iterator<Item = u32> + 'a> {
        let Some(lists) = &plan.driver else {
            return if rev {
                Box::new((lo..hi).rev())
            } else {
                Box::new(lo..hi)
            };
        };
        let cut = |l: &'a [u32]| &l[l.partition_point(|&s| s < lo)..l.partition_point(|&s| s < hi)];
        let lists: Vec<&'a [u32]> = lists
            .iter()
            .map(|l| cut(l))
            .filter(|l| !l.is_empty())
            .collect();
        match (lists.len(), rev) {
            (0, _) => Box::new(std::iter::empty()),
            (1, false) => Box::new(lists[0].iter().copied()),
            (1, true) => Box::new(lists[0].iter().rev().copied()),
            _ => Box::new(Merge::new(lists, rev)),
        }
    }

    /// The live slots in the query's time range, further cut by its cursor when `paged`.
    fn slot_range(&self, q: &Query, paged: bool) -> (u32, u32) {
        let rec = &self.rec;
        let mut lo = rec.first;
        let mut hi = rec.slots();
        if let Some(since) = q.since_us {
            lo = lo.max(rec.times.partition_point(|&t| t < since) as u32);
        }
        if let Some(until) = q.until_us {
            hi = hi.min(rec.times.partition_point(|&t| t <= until) as u32);
        }
        if let (true, Some(after)) = (paged, q.after) {
            if q.newest_first {
                hi = hi.min(rec.slot_of_offset(after));
            } else {
                lo = lo.max(rec.offsets.partition_point(|&o| o <= after) as u32);
            }
        }
        (lo, hi.max(lo))
    }

    /// Every live slot the query's interest and time range match, ascending.
    pub(crate) fn matching_slots(&self, q: &Query) -> Vec<u32> {
        let Some(plan) = self.plan(&q.interest) else {
            return Vec::new();
        };
        let (lo, hi) = self.slot_range(q, false);
        self.candidates(&plan, lo, hi, false)
            .filter(|&s| self.accepts(&plan, s))
            .collect()
    }

    /// A page of the records the query matches. See [`Query`].
    pub fn query(&self, q: &Query) -> Page {
        let Some(plan) = self.plan(&q.interest) else {
            return Page::default();
        };
        let limit = q.limit.max(1);
        let mut slots: Vec<u32> = match &q.latest_by {
            None => {
                let (lo, hi) = self.slot_range(q, true);
                self.candidates(&plan, lo, hi, q.newest_first)
                    .filter(|&s| self.accepts(&plan, s))
                    .take(limit.saturating_add(1))
                    .collect()
            }
            Some(key) => self.latest(q, &plan, key, limit),
        };
        let more = slots.len() > limit;
        slots.truncate(limit);
        let hits: Vec<Hit> = slots
            .iter()
            .map(|&s| Hit {
                offset: self.rec.offsets[s as usize],
                timestamp_us: self.rec.times[s as usize],
            })
            .collect();
        let next = more.then(|| hits.last().map(|h| h.offset)).flatten();
        Page { hits, next }
    }

    /// Latest per key: the newest matching slot per value of `key` in the time range, in the
    /// query's order, past its cursor, at most `limit + 1` of them.
    fn latest(&self, q: &Query, plan: &Plan<'_>, key: &str, limit: usize) -> Vec<u32> {
        let Some(&attr) = self.attr_ids.get(key) else {
            return Vec::new();
        };
        let (lo, hi) = self.slot_range(q, false);
        let mut seen = HashSet::new();
        let mut newest: Vec<u32> = self
            .candidates(plan, lo, hi, true)
            .filter(|&s| self.accepts(plan, s))
            .filter(|&s| self.rec.value_of(s, attr).is_some_and(|v| seen.insert(v)))
            .collect();
        if !q.newest_first {
            newest.reverse();
        }
        let offsets = &self.rec.offsets;
        newest
            .into_iter()
            .filter(|&s| {
                let o = offsets[s as usize];
                q.after
                    .is_none_or(|a| if q.newest_first { o < a } else { o > a })
            })
            .take(limit.saturating_add(1))
            .collect()
    }
}

/// Several ascending slot lists merged into one ascending (or, `rev`, descending) stream.
/// The lists are disjoint: a record has one value per attribute.
struct Merge<'a> {
    lists: Vec<&'a [u32]>,
    /// Per list, how many of its slots were taken.
    taken: Vec<usize>,
    heap: BinaryHeap<Reverse<(u32, usize)>>,
    rev: bool,
}

impl<'a> Merge<'a> {
    fn new(lists: Vec<&'a [u32]>, rev: bool) -> Self {
        let mut m = Merge {
            taken: vec![0; lists.len()],
            heap: BinaryHeap::with_capacity(lists.len()),
            lists,
            rev,
        };
        for i in 0..m.lists.len() {
            m.push(i);
        }
        m
    }

    /// Puts list `i`'s next slot on the heap, keyed so that the heap's top comes first.
    fn push(&mut self, i: usize) {
        let l = self.lists[i];
        let Some(k) = l.len().checked_sub(self.taken[i] + 1) else {
            return;
        };
        let key = if self.rev { !l[k] } else { l[self.taken[i]] };
        self.heap.push(Reverse((key, i)));
    }
}

impl Iterator for Merge<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let Reverse((key, i)) = self.heap.pop()?;
        self.taken[i] += 1;
        self.push(i);
        Some(if self.rev { !key } else { key })
    }
}
