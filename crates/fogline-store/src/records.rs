//! The records themselves, as columns indexed by *slot* (the order of insertion, which is
//! offset order and, timestamps being clamped as the log clamps them, time order too).
//!
//! Invariants: `offsets` strictly increases and `times` never decreases with the slot; the
//! slots below `first` are forgotten (retention) and so are the slots marked in `dead`
//! (`delete`); a record's compact profile is `pairs[ends[slot - 1]..ends[slot]]`, one
//! `(attribute id, value id)` per attribute.

/// The columns. See the [module docs](self).
#[derive(Default)]
pub(crate) struct Records {
    pub offsets: Vec<u64>,
    pub times: Vec<u64>,
    pub topics: Vec<u32>,
    pub ends: Vec<u32>,
    pub pairs: Vec<(u32, u32)>,
    /// Slots forgotten by `delete`, one bit each.
    dead: Vec<u64>,
    /// Slots below this are forgotten by retention.
    pub first: u32,
    /// Slots at or above `first` that are marked dead.
    pub dead_count: usize,
}

impl Records {
    /// Slots in all, forgotten ones included.
    pub fn slots(&self) -> u32 {
        self.offsets.len() as u32
    }

    /// Records not forgotten.
    pub fn live(&self) -> usize {
        self.offsets.len() - self.first as usize - self.dead_count
    }

    /// Appends a record whose pairs were pushed onto `pairs` already.
    pub fn push(&mut self, offset: u64, time: u64, topic: u32) {
        let slot = self.offsets.len();
        self.offsets.push(offset);
        self.times.push(time);
        self.topics.push(topic);
        self.ends.push(self.pairs.len() as u32);
        if slot % 64 == 0 {
            self.dead.push(0);
        }
    }

    /// The compact profile of `slot`.
    pub fn pairs(&self, slot: u32) -> &[(u32, u32)] {
        let s = slot as usize;
        let start = if s == 0 { 0 } else { self.ends[s - 1] as usize };
        &self.pairs[start..self.ends[s] as usize]
    }

    /// The value id `slot` has for attribute `attr`, if it has the attribute.
    pub fn value_of(&self, slot: u32, attr: u32) -> Option<u32> {
        self.pairs(slot)
            .iter()
            .find(|(a, _)| *a == attr)
            .map(|&(_, v)| v)
    }

    pub fn is_dead(&self, slot: u32) -> bool {
        slot < self.first || self.dead[slot as usize / 64] >> (slot % 64) & 1 == 1
    }

    /// Forgets `slot` (a live one).
    pub fn kill(&mut self, slot: u32) {
        self.dead[slot as usize / 64] |= 1 << (slot % 64);
        self.dead_count += 1;
    }

    /// Forgets every slot below `first`.
    pub fn forget_before(&mut self, first: u32) {
        if first <= self.first {
            return;
        }
        let marked = (self.first..first)
            .filter(|&s| self.dead[s as usize / 64] >> (s % 64) & 1 == 1)
            .count();
        self.dead_count -= marked;
        self.first = first;
    }

    /// The first slot whose offset is at least `offset`.
    pub fn slot_of_offset(&self, offset: u64) -> u32 {
        self.offsets.partition_point(|&o| o < offset) as u32
    }

    /// Heap bytes held by the columns.
    pub fn heap_bytes(&self) -> usize {
        self.offsets.capacity() * 8
            + self.times.capacity() * 8
            + self.topics.capacity() * 4
            + self.ends.capacity() * 4
            + self.pairs.capacity() * 8
            + self.dead.capacity() * 8
    }
}
