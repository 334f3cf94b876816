//! Everything the interests ask of one attribute, arranged so a value finds the terms it
//! satisfies without looking at the others.

use super::geo::{GeoGrid, Shape};
use super::range::RangeTree;
use super::FastMap;
use crate::model::Predicate;

/// Owners of one keyword: interest slots, one entry per term (duplicates allowed).
type Owners = Vec<u32>;

/// A wildcard pattern and its owner, kept under the literal text before its first `*`/`?`.
struct Pattern {
    pattern: String,
    slot: u32,
}

/// The terms on one attribute.
#[derive(Default)]
pub(crate) struct AttrIndex {
    present: Owners,
    exact: FastMap<String, Owners>,
    prefix: FastMap<String, Owners>,
    /// Keyed by the suffix itself; looked up with the value's suffixes.
    suffix: FastMap<String, Owners>,
    wildcard: FastMap<String, Vec<Pattern>>,
    /// The longest key in `prefix`/`suffix`/`wildcard`, in bytes: bounds the lookups a
    /// value needs (never lowered on removal; only costs a few lookups).
    longest_prefix: usize,
    longest_suffix: usize,
    longest_literal: usize,
    range: Option<RangeTree>,
    geo: GeoGrid,
    terms: usize,
}

fn drop_one(list: &mut Owners, slot: u32) {
    if let Some(i) = list.iter().position(|&s| s == slot) {
        list.swap_remove(i);
    }
}

fn drop_key(map: &mut FastMap<String, Owners>, key: &str, slot: u32) {
    if let Some(list) = map.get_mut(key) {
        drop_one(list, slot);
        if list.is_empty() {
            map.remove(key);
        }
    }
}

/// The range bounds, or `None` when no number can satisfy them (a NaN bound).
fn bounds(low: Option<f64>, high: Option<f64>) -> Option<(f64, f64)> {
    let (l, h) = (
        low.unwrap_or(f64::NEG_INFINITY),
        high.unwrap_or(f64::INFINITY),
    );
    (!l.is_nan() && !h.is_nan()).then_some((l, h))
}

/// The literal text a wildcard pattern starts with (escapes resolved), up to its first
/// unescaped `*` or `?`: every value it matches starts with it.
fn literal(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' | '?' => break,
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

impl AttrIndex {
    pub(crate) fn is_empty(&self) -> bool {
        self.terms == 0
    }

    pub(crate) fn insert(&mut self, p: &Predicate, slot: u32, term: u32) {
        self.terms += 1;
        match p {
            Predicate::Present => self.present.push(slot),
            Predicate::Exact(k) => self.exact.entry(k.clone()).or_default().push(slot),
            Predicate::Prefix(k) => {
                self.longest_prefix = self.longest_prefix.max(k.len());
                self.prefix.entry(k.clone()).or_default().push(slot);
            }
            Predicate::Suffix(k) => {
                self.longest_suffix = self.longest_suffix.max(k.len());
                self.suffix.entry(k.clone()).or_default().push(slot);
            }
            Predicate::Wildcard(k) => {
                let lit = literal(k);
                self.longest_literal = self.longest_literal.max(lit.len());
                let pat = Pattern {
                    pattern: k.clone(),
                    slot,
                };
                self.wildcard.entry(lit).or_default().push(pat);
            }
            Predicate::Range { low, high } => {
                if let Some((l, h)) = bounds(*low, *high) {
                    self.range
                        .get_or_insert_with(RangeTree::new)
                        .insert(l, h, slot, term);
                }
            }
            Predicate::GeoBox { .. } | Predicate::Near { .. } => {
                self.geo
                    .insert(Shape::of(p).expect("a geo predicate"), slot, term);
            }
        }
    }

    pub(crate) fn remove(&mut self, p: &Predicate, slot: u32, term: u32) {
        self.terms -= 1;
        match p {
            Predicate::Present => drop_one(&mut self.present, slot),
            Predicate::Exact(k) => drop_key(&mut self.exact, k, slot),
            Predicate::Prefix(k) => drop_key(&mut self.prefix, k, slot),
            Predicate::Suffix(k) => drop_key(&mut self.suffix, k, slot),
            Predicate::Wildcard(k) => {
                let lit = literal(k);
                if let Some(list) = self.wildcard.get_mut(&lit) {
                    if let Some(i) = list.iter().position(|w| w.slot == slot) {
                        list.swap_remove(i);
                    }
                    if list.is_empty() {
                        self.wildcard.remove(&lit);
                    }
                }
            }
            Predicate::Range { low, high } => {
                if let (Some((l, h)), Some(t)) = (bounds(*low, *high), self.range.as_mut()) {
                    t.remove(l, h, slot, term);
                    if t.len() == 0 {
                        self.range = None;
                    }
                }
            }
            Predicate::GeoBox { .. } | Predicate::Near { .. } => {
                self.geo
                    .remove(Shape::of(p).expect("a geo predicate"), slot, term);
            }
        }
    }

    /// Calls `hit(slot)` once per term this value satisfies.
    pub(crate) fn stab(&self, value: Option<&str>, hit: &mut impl FnMut(u32)) {
        self.present.iter().for_each(|&s| hit(s));
        let Some(v) = value else { return };
        if let Some(list) = self.exact.get(v) {
            list.iter().for_each(|&s| hit(s));
        }
        // Every prefix (suffix) of the value at a char boundary, up to the longest key.
        if !self.prefix.is_empty() {
            for (i, _) in v.char_indices().chain([(v.len(), ' ')]) {
                if i > self.longest_prefix {
                    break;
                }
                if let Some(list) = self.prefix.get(&v[..i]) {
                    list.iter().for_each(|&s| hit(s));
                }
            }
        }
        if !self.suffix.is_empty() {
            for (i, _) in v.char_indices().chain([(v.len(), ' ')]) {
                if v.len() - i > self.longest_suffix {
                    continue;
                }
                if let Some(list) = self.suffix.get(&v[i..]) {
                    list.iter().for_each(|&s| hit(s));
                }
            }
        }
        if !self.wildcard.is_empty() {
            for (i, _) in v.char_indices().chain([(v.len(), ' ')]) {
                if i > self.longest_literal {
                    break;
                }
                for w in self.wildcard.get(&v[..i]).into_iter().flatten() {
                    if crate::wildcard_matches(&w.pattern, v) {
                        hit(w.slot);
                    }
                }
            }
        }
        if let Some(t) = &self.range {
            if let Some(x) = crate::parse_number(v) {
                t.stab(x, hit);
            }
        }
        if self.geo.len() > 0 {
            if let Some(p) = crate::parse_point(v) {
                self.geo.stab(p, hit);
            }
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        fn map<T>(m: &FastMap<String, Vec<T>>) -> usize {
            m.capacity() * (std::mem::size_of::<(String, Vec<T>)>() + 1)
                + m.iter()
                    .map(|(k, v)| k.capacity() + v.capacity() * std::mem::size_of::<T>())
                    .sum::<usize>()
        }
        let patterns: usize = self
            .wildcard
            .values()
            .flatten()
            .map(|w| w.pattern.capacity())
            .sum();
        self.present.capacity() * 4
            + map(&self.exact)
            + map(&self.prefix)
            + map(&self.suffix)
            + map(&self.wildcard)
            + patterns
            + self.range.as_ref().map_or(0, RangeTree::heap_bytes)
            + self.geo.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::literal;

    #[test]
    fn a_pattern_is_filed_under_its_literal_head() {
        assert_eq!(literal("L*d?r"), "L");
        assert_eq!(literal("Li\\**"), "Li*");
        assert_eq!(literal("*dar"), "");
        assert_eq!(literal("é?"), "é");
    }
}
