//! An open-addressing hash map from `u64` keys to trie node ids, built once and read-only after.
//!
//! Layout: a power-of-two array of `(key, value)` slots at most half full, linear probing; an
//! empty slot has value `EMPTY`. Keys are `parent node id << 32 | folded chunk`.

const EMPTY: u32 = u32::MAX;
const MUL: u64 = 0x9E37_79B9_7F4A_7C15;

#[derive(Debug, Clone)]
pub(crate) struct NodeMap {
    slots: Box<[(u64, u32)]>,
    shift: u32,
}

impl NodeMap {
    /// Builds the map; `pairs` has unique keys and values other than `u32::MAX`.
    pub(crate) fn new(pairs: &[(u64, u32)]) -> NodeMap {
        let cap = (pairs.len() * 2).next_power_of_two().max(16);
        let shift = 64 - cap.trailing_zeros();
        let mut slots = vec![(0u64, EMPTY); cap].into_boxed_slice();
        for &(k, v) in pairs {
            let mut h = (k.wrapping_mul(MUL) >> shift) as usize;
            while slots[h].1 != EMPTY {
                h = (h + 1) & (cap - 1);
            }
            slots[h] = (k, v);
        }
        NodeMap { slots, shift }
    }

    #[inline(always)]
    pub(crate) fn get(&self, k: u64) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut h = (k.wrapping_mul(MUL) >> self.shift) as usize;
        loop {
            let (sk, sv) = self.slots[h];
            if sv == EMPTY {
                return None;
            }
            if sk == k {
                return Some(sv);
            }
            h = (h + 1) & mask;
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.slots)
    }
}

#[cfg(test)]
mod tests {
    use super::NodeMap;

    #[test]
    fn finds_every_key_and_no_other() {
        let pairs: Vec<(u64, u32)> = (0..1000u64).map(|k| ((k * 7919) << 20, k as u32)).collect();
        let m = NodeMap::new(&pairs);
        for &(k, v) in &pairs {
            assert_eq!(m.get(k), Some(v));
        }
        assert_eq!(m.get(1), None);
        assert_eq!(NodeMap::new(&[]).get(0), None);
    }
}
