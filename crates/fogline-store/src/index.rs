//! [`ProfileIndex`]: records filed by attribute value, kept in step with the log.
//!
//! Forgetting is cheap and compaction is amortised: `remove_before` moves the first live
//! slot, `delete` marks slots dead, and once the forgotten slots outnumber the live ones
//! (and there are at least [`COMPACT_MIN`] of them) the index is rebuilt from the live
//! records alone, so memory stays within about twice what the live records need. Slots are
//! `u32`; a rebuild also renumbers them from 0, so they run out only with 2^32 live records.

use std::sync::Arc;

use fogline_profile::DataProfile;

use crate::attr::{AttrIndex, BARE};
use crate::records::Records;
use crate::{FastMap, Query};

/// Forgotten slots below this never trigger a rebuild (tests rebuild often).
const COMPACT_MIN: usize = if cfg!(test) { 4 } else { 4096 };

/// An in-memory index of a log's records by data profile, topic and time. See the
/// [crate docs](crate).
#[derive(Default)]
pub struct ProfileIndex {
    pub(crate) rec: Records,
    pub(crate) attr_ids: FastMap<Box<str>, u32>,
    pub(crate) attrs: Vec<AttrIndex>,
    pub(crate) topic_ids: FastMap<Arc<str>, u32>,
    pub(crate) topics: Vec<Arc<str>>,
    last_offset: Option<u64>,
    /// The latest timestamp inserted (the clamp for the next one).
    last_time: u64,
    refused: u64,
}

impl ProfileIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Files a record. Offsets must increase strictly across calls: a smaller or equal one is
    /// refused (counted in [`refused`](Self::refused)) and `false` returned. A timestamp
    /// older than the previous record's is raised to it, as the log does. An attribute given
    /// twice in `profile.pairs` counts once, with its first value, as
    /// [`DataProfile::get`] reads it. Also `false` with 2^32 - 1 live records.
    pub fn insert(
        &mut self,
        offset: u64,
        timestamp_us: u64,
        topic: &str,
        profile: &DataProfile,
    ) -> bool {
        let pairs = profile
            .pairs
            .iter()
            .map(|(a, v)| (a.as_str(), v.as_deref()));
        self.insert_pairs(offset, timestamp_us, topic, pairs)
    }

    /// [`insert`](Self::insert) of the profile a record's header block carries
    /// ([`DataProfile::from_header_block`]), read in place: filing a record copies only the
    /// values the index has not seen before.
    pub fn insert_block(
        &mut self,
        offset: u64,
        timestamp_us: u64,
        topic: &str,
        header_block: &[u8],
    ) -> bool {
        // Room for a typical profile: growing from empty was a few percent of filing one.
        let mut pairs = Vec::with_capacity(16);
        fogline_profile::carried_pairs(header_block, &mut pairs);
        self.insert_pairs(offset, timestamp_us, topic, pairs.into_iter())
    }

    fn insert_pairs<'a>(
        &mut self,
        offset: u64,
        timestamp_us: u64,
        topic: &str,
        pairs: impl Iterator<Item = (&'a str, Option<&'a str>)>,
    ) -> bool {
        if self.last_offset.is_some_and(|last| offset <= last) {
            self.refused += 1;
            return false;
        }
        if self.rec.slots() == u32::MAX {
            self.compact();
            if self.rec.slots() == u32::MAX {
                self.refused += 1;
                return false;
            }
        }
        let slot = self.rec.slots();
        let start = self.rec.pairs.len();
        for (name, value) in pairs {
            let attr = match self.attr_ids.get(name) {
                Some(&id) => id,
                None => {
                    let id = self.attrs.len() as u32;
                    self.attr_ids.insert(name.into(), id);
                    self.attrs.push(AttrIndex::default());
                    id
                }
            };
            if self.rec.pairs[start..].iter().any(|(a, _)| *a == attr) {
                continue;
            }
            let vid = self.attrs[attr as usize].insert(slot, value);
            self.rec.pairs.push((attr, vid));
        }
        let topic = match self.topic_ids.get(topic) {
            Some(&id) => id,
            None => {
                let id = self.topics.len() as u32;
                let name: Arc<str> = Arc::from(topic);
                self.topic_ids.insert(name.clone(), id);
                self.topics.push(name);
                id
            }
        };
        let time = timestamp_us.max(self.last_time);
        self.last_time = time;
        self.rec.push(offset, time, topic);
        self.last_offset = Some(offset);
        true
    }

    /// Retention: forgets every record below `offset`.
    pub fn remove_before(&mut self, offset: u64) {
        let first = self.rec.slot_of_offset(offset);
        self.rec.forget_before(first);
        self.maybe_compact();
    }

    /// The `delete` action: forgets the records that the query's interest and time range
    /// match (its paging, order and `latest_by` are not used); their offsets, ascending.
    pub fn delete(&mut self, q: &Query) -> Vec<u64> {
        self.delete_with(q, |_| Ok::<(), std::convert::Infallible>(()))
            .unwrap_or_else(|e| match e {})
    }

    /// [`delete`](Self::delete) that first hands the selected offsets to `keep` (to record
    /// the deletion durably) and forgets nothing when it fails.
    ///
    /// # Errors
    /// `keep`'s.
    pub fn delete_with<E>(
        &mut self,
        q: &Query,
        keep: impl FnOnce(&[u64]) -> Result<(), E>,
    ) -> Result<Vec<u64>, E> {
        let slots = self.matching_slots(q);
        let offsets: Vec<u64> = slots
            .iter()
            .map(|&s| self.rec.offsets[s as usize])
            .collect();
        keep(&offsets)?;
        for &s in &slots {
            self.rec.kill(s);
        }
        self.maybe_compact();
        Ok(offsets)
    }

    /// Records held (not forgotten).
    pub fn len(&self) -> usize {
        self.rec.live()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// One past the last offset inserted (0 when none was).
    pub fn next_offset(&self) -> u64 {
        self.last_offset.map_or(0, |last| last.saturating_add(1))
    }

    /// Inserts refused for an offset that did not increase (or for lack of slots).
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Heap bytes held, estimated from the capacities of the vectors and maps, the text of
    /// the distinct values and names, and B-tree nodes at two thirds full. Walks every
    /// distinct value: meant for metrics, not for every record.
    pub fn memory_bytes(&self) -> usize {
        let names: usize = self.attr_ids.keys().map(|k| k.len() + 24).sum();
        let topics: usize = self.topics.iter().map(|t| t.len() + 40).sum();
        std::mem::size_of::<Self>()
            + self.rec.heap_bytes()
            + names
            + topics
            + self.attrs.capacity() * std::mem::size_of::<AttrIndex>()
            + self.attrs.iter().map(AttrIndex::heap_bytes).sum::<usize>()
    }

    fn maybe_compact(&mut self) {
        let forgotten = self.rec.slots() as usize - self.rec.live();
        if forgotten >= COMPACT_MIN && forgotten > self.rec.live() {
            self.compact();
        }
    }

    /// Rebuilds the index from the live records alone, renumbering their slots from 0.
    fn compact(&mut self) {
        let old = std::mem::take(self);
        let names: Vec<&str> = {
            let mut v = vec![""; old.attrs.len()];
            for (name, &id) in &old.attr_ids {
                v[id as usize] = name;
            }
            v
        };
        for slot in old.rec.first..old.rec.slots() {
            if old.rec.is_dead(slot) {
                continue;
            }
            let s = slot as usize;
            let pairs = old.rec.pairs(slot).iter().map(|&(a, v)| {
                let value = (v != BARE).then(|| old.attrs[a as usize].text(v));
                (names[a as usize], value)
            });
            let topic = &old.topics[old.rec.topics[s] as usize];
            self.insert_pairs(old.rec.offsets[s], old.rec.times[s], topic, pairs);
        }
        self.last_offset = old.last_offset;
        self.last_time = old.last_time;
        self.refused = old.refused;
    }
}

#[cfg(test)]
mod tests {
    use fogline_profile::{DataProfile, Interest};

    use super::*;

    fn profile(i: u64) -> DataProfile {
        DataProfile::parse(&format!("sensor=s{} n={i} geo=0,{}", i % 10, i % 180)).unwrap()
    }

    #[test]
    fn offsets_must_increase_and_times_are_clamped() {
        let mut index = ProfileIndex::new();
        assert!(index.insert(5, 100, "t", &profile(0)));
        assert!(!index.insert(5, 200, "t", &profile(1)));
        assert!(!index.insert(4, 200, "t", &profile(1)));
        assert!(index.insert(9, 50, "t", &profile(2)));
        assert_eq!(
            (index.len(), index.next_offset(), index.refused()),
            (2, 10, 2)
        );
        let hits = index.query(&Query::new(Interest::default())).hits;
        assert_eq!(hits[1].timestamp_us, 100);
    }

    #[test]
    fn retention_gives_memory_back() {
        let mut index = ProfileIndex::new();
        for i in 0..20_000 {
            index.insert(i, i, "t", &profile(i));
        }
        let full = index.memory_bytes();
        index.remove_before(19_000);
        assert_eq!(index.len(), 1000);
        assert!(
            index.memory_bytes() < full / 5,
            "{} of {full}",
            index.memory_bytes()
        );
        let q = Query::new(Interest::parse("sensor=s3").unwrap());
        let hits = index.query(&q).hits;
        assert_eq!(hits.len(), 100);
        assert_eq!(hits[0].offset, 19_003);
        assert!(index.insert(20_000, 0, "t", &profile(0)));
        assert_eq!(
            index.query(&Query::new(Interest::default())).hits[1000].timestamp_us,
            19_999
        );
    }

    #[test]
    fn delete_forgets_what_it_returns() {
        let mut index = ProfileIndex::new();
        for i in 0..100 {
            index.insert(i, i, if i % 2 == 0 { "a/x" } else { "b/x" }, &profile(i));
        }
        let q = Query {
            since_us: Some(10),
            until_us: Some(29),
            ..Query::new(Interest::parse("@a/+ sensor=s*").unwrap())
        };
        let gone = index.delete(&q);
        assert_eq!(gone, (10..30).step_by(2).collect::<Vec<_>>());
        assert!(index.delete(&q).is_empty());
        assert_eq!(index.len(), 90);
    }
}
