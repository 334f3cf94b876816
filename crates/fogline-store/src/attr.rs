//! One attribute's inverted structures: its distinct values, each with the sorted list of
//! record slots that carry it, filed so that every predicate kind finds its values without
//! scanning the others.
//!
//! - exact: a hash table of value ids, by the hash of their text; the texts themselves lie
//!   one after the other in one string, so a new value costs no allocation of its own;
//! - prefix and wildcard: an ordered map of the texts, range-scanned from the literal head;
//! - suffix: an ordered map of the texts reversed (by characters);
//!   (both keyed by [`SortKey`], which keeps the text's first bytes inline);
//! - range: an ordered set of the values that are numbers, by a total order on `f64`;
//! - box and radius: an ordered set of the values that are points, by latitude; the latitude
//!   band is scanned and each point checked with fogline-profile's own functions.
//!
//! Every structure but the exact one is built by the attribute's first query that needs it
//! and kept up from then on. Most attributes are only ever asked for exact values, if at
//! all (a record id, a sensor name), and filing each new value in all four cost more than
//! the rest of storing a record whose key is new: the store benchmark's records carry two
//! new values each (an id and a position). The first query of a kind on an attribute pays
//! for the build, once: a sort of its distinct values.
//!
//! Whatever the structure returns is checked with the reference predicate where it is not
//! exact by construction, so a value is found iff [`Predicate::holds`] says so.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::hash::BuildHasher;
use std::ops::{Bound, Deref};
use std::sync::OnceLock;

use hashbrown::HashTable;

use fogline_profile::{
    box_contains, parse_number, parse_point, wildcard_matches, GeoPoint, Predicate, EARTH_RADIUS_M,
};

/// The value id of an attribute present without a value (`urgent`).
pub(crate) const BARE: u32 = u32::MAX;

/// A distinct value (its text's place in [`AttrIndex::texts`]) and the slots (ascending)
/// of the records that carry it.
pub(crate) struct Value {
    start: usize,
    len: u32,
    pub slots: Slots,
}

/// A value's slots, the first kept inline: most values of a key such as a record id are
/// carried once, and a vector each cost an allocation and 16 more bytes.
pub(crate) enum Slots {
    One(u32),
    Many(Vec<u32>),
}

impl Slots {
    fn push(&mut self, slot: u32) {
        match self {
            Slots::One(first) => *self = Slots::Many(vec![*first, slot]),
            Slots::Many(v) => v.push(slot),
        }
    }

    /// Heap bytes.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Slots::One(_) => 0,
            Slots::Many(v) => v.capacity() * 4,
        }
    }
}

impl Deref for Slots {
    type Target = [u32];

    fn deref(&self) -> &[u32] {
        match self {
            Slots::One(first) => std::slice::from_ref(first),
            Slots::Many(v) => v,
        }
    }
}

/// A key on which `f64` sorts by `total_cmp`, with -0 filed as 0 (the range check compares
/// numerically, and `-0.0 <= 0.0` holds there).
fn num_key(x: f64) -> u64 {
    let bits = (x + 0.0).to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// A B-tree key that sorts as its text does, with the text's first 8 bytes inline (`head`,
/// big-endian, zero-padded): most comparisons end there, without reading the text from the
/// heap, which in a tree of a million values is a cache miss per comparison (it was about
/// half the cost of filing a new value).
///
/// Ordering by `(head, text)` is ordering by `text`: at the first byte where two heads
/// differ, either both texts have that byte (and differ there, equal before), or one text
/// has ended (a padding zero against a byte above zero) and is a prefix of the other, so the
/// smaller. Equal heads leave the decision to the texts.
#[derive(Clone, Debug)]
pub(crate) struct SortKey<T> {
    head: u64,
    text: T,
}

impl<T: Deref<Target = str>> SortKey<T> {
    fn new(text: T) -> Self {
        let mut head = [0u8; 8];
        let bytes = text.as_bytes();
        let n = bytes.len().min(8);
        head[..n].copy_from_slice(&bytes[..n]);
        SortKey {
            head: u64::from_be_bytes(head),
            text,
        }
    }
}

impl<T: Deref<Target = str>> Ord for SortKey<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.head
            .cmp(&other.head)
            .then_with(|| (*self.text).cmp(&*other.text))
    }
}

impl<T: Deref<Target = str>> PartialOrd for SortKey<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T: Deref<Target = str>> PartialEq for SortKey<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<T: Deref<Target = str>> Eq for SortKey<T> {}

/// The prefix and suffix structures: each value's text (reversed, for suffixes), to its id.
type Sorted = BTreeMap<SortKey<Box<str>>, u32>;

fn sorted_key(text: &str) -> SortKey<Box<str>> {
    SortKey::new(Box::from(text))
}

fn reversed_key(text: &str) -> SortKey<Box<str>> {
    let mut rev = String::with_capacity(text.len());
    rev.extend(text.chars().rev());
    SortKey::new(rev.into_boxed_str())
}

/// A margin (degrees) on the latitude band searched for a radius, far above rounding error.
const BAND_MARGIN_DEG: f64 = 1e-6;

/// The distinct values of one attribute. See the [module docs](self).
#[derive(Default)]
pub(crate) struct AttrIndex {
    /// By value id.
    pub values: Vec<Value>,
    /// Slots of the records with this attribute, valued or bare.
    pub present: Vec<u32>,
    /// Every value's text, one after the other, in id order.
    texts: String,
    /// `(value id, the 32-bit hash of its text)`, by that hash ([`table_hash`]): growing
    /// the table rehashes from the stored hashes, not from the texts.
    exact: HashTable<(u32, u32)>,
    hasher: foldhash::fast::RandomState,
    sorted: OnceLock<Sorted>,
    reversed: OnceLock<Sorted>,
    numbers: OnceLock<BTreeSet<(u64, u32)>>,
    points: OnceLock<BTreeMap<(u64, u32), GeoPoint>>,
}

impl AttrIndex {
    /// Files `slot` (larger than every slot filed before) under `value`; its value id.
    pub fn insert(&mut self, slot: u32, value: Option<&str>) -> u32 {
        self.present.push(slot);
        let Some(text) = value else {
            return BARE;
        };
        let hash = self.hash32(text);
        match self.find(text, hash) {
            Some(id) => {
                self.values[id as usize].slots.push(slot);
                id
            }
            None => self.add_value(text, hash, slot),
        }
    }

    fn hash32(&self, text: &str) -> u32 {
        (self.hasher.hash_one(text) >> 32) as u32
    }

    /// The id of the value `text`, whose [`hash32`](Self::hash32) is `hash`.
    fn find(&self, text: &str, hash: u32) -> Option<u32> {
        self.exact
            .find(table_hash(hash), |&(id, h)| {
                h == hash && self.text(id) == text
            })
            .map(|&(id, _)| id)
    }

    fn add_value(&mut self, text: &str, hash: u32, slot: u32) -> u32 {
        let id = u32::try_from(self.values.len()).expect("fewer values than slots");
        let len = u32::try_from(text.len()).expect("a value shorter than 4 GiB");
        self.values.push(Value {
            start: self.texts.len(),
            len,
            slots: Slots::One(slot),
        });
        self.texts.push_str(text);
        self.exact
            .insert_unique(table_hash(hash), (id, hash), |&(_, h)| table_hash(h));
        if let Some(sorted) = self.sorted.get_mut() {
            sorted.insert(sorted_key(text), id);
        }
        if let Some(reversed) = self.reversed.get_mut() {
            reversed.insert(reversed_key(text), id);
        }
        if let Some(numbers) = self.numbers.get_mut() {
            if let Some(n) = parse_number(text) {
                numbers.insert((num_key(n), id));
            }
        }
        if let Some(points) = self.points.get_mut() {
            if let Some(p) = parse_point(text) {
                points.insert((num_key(p.lat), id), p);
            }
        }
        id
    }

    /// The text of value `id`.
    pub fn text(&self, id: u32) -> &str {
        let v = &self.values[id as usize];
        &self.texts[v.start..v.start + v.len as usize]
    }

    /// Every value's `(text, id)`.
    fn texts(&self) -> impl Iterator<Item = (&str, u32)> {
        (0..self.values.len() as u32).map(|id| (self.text(id), id))
    }

    /// The prefix structure, built on first use.
    fn sorted(&self) -> &Sorted {
        self.sorted
            .get_or_init(|| self.texts().map(|(t, id)| (sorted_key(t), id)).collect())
    }

    /// The suffix structure, built on first use.
    fn reversed(&self) -> &Sorted {
        self.reversed
            .get_or_init(|| self.texts().map(|(t, id)| (reversed_key(t), id)).collect())
    }

    /// The values that are numbers, built on first use.
    fn numbers(&self) -> &BTreeSet<(u64, u32)> {
        self.numbers.get_or_init(|| {
            self.texts()
                .filter_map(|(t, id)| Some((num_key(parse_number(t)?), id)))
                .collect()
        })
    }

    /// The values that are points, built on first use.
    fn points(&self) -> &BTreeMap<(u64, u32), GeoPoint> {
        self.points.get_or_init(|| {
            self.texts()
                .filter_map(|(t, id)| {
                    let p = parse_point(t)?;
                    Some(((num_key(p.lat), id), p))
                })
                .collect()
        })
    }

    /// The id of the value `text`, if any record carried it.
    pub fn exact(&self, text: &str) -> Option<u32> {
        self.find(text, self.hash32(text))
    }

    /// The ids of the values (not bare) for which `p` holds, in no particular order.
    /// `Present` is not asked here (it is the `present` list).
    pub fn resolve(&self, p: &Predicate) -> Vec<u32> {
        match p {
            Predicate::Present => (0..self.values.len() as u32).collect(),
            Predicate::Exact(s) => self.exact(s).into_iter().collect(),
            Predicate::Prefix(head) => self.with_prefix(head).map(|(_, id)| id).collect(),
            Predicate::Suffix(tail) => {
                let rev: String = tail.chars().rev().collect();
                let from = SortKey::new(rev.into_boxed_str());
                self.reversed()
                    .range((Bound::Included(&from), Bound::Unbounded))
                    .take_while(|(k, _)| k.text.starts_with(&*from.text))
                    .map(|(_, &id)| id)
                    .collect()
            }
            Predicate::Wildcard(pattern) => self
                .with_prefix(&literal_head(pattern))
                .filter(|(text, _)| wildcard_matches(pattern, text))
                .map(|(_, id)| id)
                .collect(),
            Predicate::Range { low, high } => {
                let low = low.unwrap_or(f64::NEG_INFINITY);
                let high = high.unwrap_or(f64::INFINITY);
                if low.is_nan() || high.is_nan() || num_key(low) > num_key(high) {
                    return Vec::new();
                }
                self.numbers()
                    .range((num_key(low), 0)..=(num_key(high), u32::MAX))
                    .map(|&(_, id)| id)
                    .collect()
            }
            Predicate::GeoBox {
                south_west,
                north_east,
            } => self
                .latitude_band(south_west.lat, north_east.lat)
                .filter(|(_, pt)| box_contains(*south_west, *north_east, *pt))
                .map(|(id, _)| id)
                .collect(),
            Predicate::Near { center, radius_m } => {
                // Great-circle distance is at least the latitude difference, for a centre on
                // the sphere; any other centre gets the whole band.
                let on_sphere = (-90.0..=90.0).contains(&center.lat);
                let half = (radius_m / EARTH_RADIUS_M).to_degrees() + BAND_MARGIN_DEG;
                let (south, north) = if on_sphere && half.is_finite() {
                    (center.lat - half, center.lat + half)
                } else {
                    (f64::NEG_INFINITY, f64::INFINITY)
                };
                self.latitude_band(south, north)
                    .filter(|(_, pt)| center.distance_m(*pt) <= *radius_m)
                    .map(|(id, _)| id)
                    .collect()
            }
        }
    }

    /// Values starting with `head`, in text order.
    fn with_prefix<'a>(&'a self, head: &'a str) -> impl Iterator<Item = (&'a str, u32)> + 'a {
        let from = sorted_key(head);
        self.sorted()
            .range((Bound::Included(from), Bound::Unbounded))
            .take_while(move |(k, _)| k.text.starts_with(head))
            .map(|(k, &id)| (&*k.text, id))
    }

    /// Points with latitude in `south..=north` (every point when a bound is not a number:
    /// the caller's exact check then decides).
    fn latitude_band(
        &self,
        south: f64,
        north: f64,
    ) -> Box<dyn Iterator<Item = (u32, GeoPoint)> + '_> {
        if south.is_nan() || north.is_nan() {
            return Box::new(self.points().iter().map(|(&(_, id), &p)| (id, p)));
        }
        if south > north {
            return Box::new(std::iter::empty());
        }
        let range = (num_key(south), 0)..=(num_key(north), u32::MAX);
        Box::new(self.points().range(range).map(|(&(_, id), &p)| (id, p)))
    }

    /// Heap bytes held, estimated: capacities of the vectors, text and tables, and B-tree
    /// entries at 1.5 times their size (nodes are about two thirds full).
    pub fn heap_bytes(&self) -> usize {
        let slots: usize = self.values.iter().map(|v| v.slots.heap_bytes()).sum();
        let tree = |entry: usize, n: usize| n * entry * 3 / 2;
        let keyed = |m: &OnceLock<Sorted>| {
            m.get().map_or(0, |m| {
                self.texts.len() + tree(std::mem::size_of::<(SortKey<Box<str>>, u32)>(), m.len())
            })
        };
        self.values.capacity() * std::mem::size_of::<Value>()
            + slots
            + self.texts.capacity()
            + self.present.capacity() * 4
            + self.exact.capacity() * (std::mem::size_of::<(u32, u32)>() + 1)
            + keyed(&self.sorted)
            + keyed(&self.reversed)
            + self.numbers.get().map_or(0, |n| tree(16, n.len()))
            + self.points.get().map_or(0, |p| tree(32, p.len()))
    }
}

/// The table's 64-bit hash from a stored 32-bit one, its bits spread over the whole word
/// (the table takes its bucket from the low bits and its tag from the high ones).
fn table_hash(h: u32) -> u64 {
    u64::from(h).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// The literal text a pattern starts with: up to its first unescaped `*` or `?`, escapes
/// resolved.
fn literal_head(pattern: &str) -> String {
    let mut head = String::new();
    let mut it = pattern.chars();
    while let Some(c) = it.next() {
        match c {
            '*' | '?' => break,
            '\\' => head.push(it.next().unwrap_or('\\')),
            c => head.push(c),
        }
    }
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(values: &[&str]) -> AttrIndex {
        let mut a = AttrIndex::default();
        for (slot, v) in values.iter().enumerate() {
            a.insert(slot as u32, Some(v));
        }
        a
    }

    fn texts(a: &AttrIndex, p: Predicate) -> Vec<String> {
        let mut v: Vec<String> = a
            .resolve(&p)
            .into_iter()
            .map(|id| a.text(id).to_string())
            .collect();
        v.sort();
        v
    }

    proptest::proptest! {
        /// Texts of up to 6 characters, 18 bytes (heads equal and not, zero bytes against padding, multi-byte
        /// characters across the 8th byte) sort by `SortKey` as by `str`.
        #[test]
        fn sort_keys_order_as_their_texts(a in "[\\x00\\x01ab京]{0,6}", b in "[\\x00\\x01ab京]{0,6}") {
            let (ka, kb) = (SortKey::new(Box::<str>::from(a.as_str())), SortKey::new(Box::<str>::from(b.as_str())));
            proptest::prop_assert_eq!(ka.cmp(&kb), a.as_str().cmp(b.as_str()));
            proptest::prop_assert_eq!(ka == kb, a == b);
        }
    }

    #[test]
    fn structures_built_by_a_first_query_are_kept_up() {
        let mut a = index(&["lidar", "7", "40,-74", "lidar"]);
        let (lo, hi) = (
            GeoPoint {
                lat: 39.0,
                lon: -75.0,
            },
            GeoPoint {
                lat: 41.0,
                lon: -73.0,
            },
        );
        let boxed = |a: &AttrIndex| {
            texts(
                a,
                Predicate::GeoBox {
                    south_west: lo,
                    north_east: hi,
                },
            )
        };
        let range = |a: &AttrIndex| {
            texts(
                a,
                Predicate::Range {
                    low: Some(5.0),
                    high: Some(10.0),
                },
            )
        };
        assert!(a.sorted.get().is_none() && a.numbers.get().is_none());
        assert_eq!(texts(&a, Predicate::Prefix("li".into())), ["lidar"]);
        assert_eq!(texts(&a, Predicate::Suffix("dar".into())), ["lidar"]);
        assert_eq!(range(&a), ["7"]);
        assert_eq!(boxed(&a), ["40,-74"]);
        assert!(a.sorted.get().is_some() && a.reversed.get().is_some());
        assert!(a.numbers.get().is_some() && a.points.get().is_some());
        for (slot, v) in ["lipid", "radar", "9", "40.5,-74.5", "lidar"]
            .iter()
            .enumerate()
        {
            a.insert(10 + slot as u32, Some(v));
        }
        assert_eq!(
            texts(&a, Predicate::Prefix("li".into())),
            ["lidar", "lipid"]
        );
        assert_eq!(
            texts(&a, Predicate::Suffix("dar".into())),
            ["lidar", "radar"]
        );
        assert_eq!(range(&a), ["7", "9"]);
        assert_eq!(boxed(&a), ["40,-74", "40.5,-74.5"]);
        assert_eq!(texts(&a, Predicate::Exact("lidar".into())), ["lidar"]);
        assert_eq!(a.values[a.exact("lidar").unwrap() as usize].slots.len(), 3);
    }

    #[test]
    fn numbers_sort_in_total_order_with_zeroes_together() {
        let xs = [-1e300, -2.5, -0.0, 0.0, 1e-300, 3.0, 1e300];
        for w in xs.windows(2) {
            assert!(num_key(w[0]) <= num_key(w[1]), "{w:?}");
        }
        assert_eq!(num_key(-0.0), num_key(0.0));
    }

    #[test]
    fn keyword_predicates_find_their_values() {
        let a = index(&["lidar", "Lidar7", "radar", "Li*", "東京", "x", ""]);
        assert_eq!(texts(&a, Predicate::Exact("lidar".into())), ["lidar"]);
        assert_eq!(texts(&a, Predicate::Prefix("Li".into())), ["Li*", "Lidar7"]);
        assert_eq!(
            texts(&a, Predicate::Suffix("dar".into())),
            ["lidar", "radar"]
        );
        assert_eq!(texts(&a, Predicate::Suffix("京".into())), ["東京"]);
        assert_eq!(
            texts(&a, Predicate::Wildcard("?ida*".into())),
            ["Lidar7", "lidar"]
        );
        assert_eq!(texts(&a, Predicate::Wildcard(r"Li\*".into())), ["Li*"]);
        assert_eq!(texts(&a, Predicate::Exact("".into())), [""]);
        assert!(texts(&a, Predicate::Exact("none".into())).is_empty());
    }

    #[test]
    fn ranges_are_inclusive_and_open_ended() {
        let a = index(&["-0", "1", "1.0", "2e1", "x", "30", "+5"]);
        let r = |low, high| texts(&a, Predicate::Range { low, high });
        assert_eq!(r(Some(0.0), Some(1.0)), ["-0", "1", "1.0"]);
        assert_eq!(r(Some(5.0), None), ["+5", "2e1", "30"]);
        assert_eq!(r(None, Some(-0.0)), ["-0"]);
        assert!(r(Some(2.0), Some(1.0)).is_empty());
        assert_eq!(r(None, None).len(), 6);
    }

    #[test]
    fn geo_predicates_check_points_exactly() {
        let a = index(&[
            "0,179.99",
            "0,-179.99",
            "90,-135",
            "10,10",
            "40.1,-74.4",
            "91,0",
        ]);
        let pt = |lat, lon| GeoPoint { lat, lon };
        let boxed = |sw, ne| {
            texts(
                &a,
                Predicate::GeoBox {
                    south_west: sw,
                    north_east: ne,
                },
            )
        };
        assert_eq!(
            boxed(pt(-1.0, 170.0), pt(1.0, -170.0)),
            ["0,-179.99", "0,179.99"]
        );
        assert_eq!(boxed(pt(80.0, 10.0), pt(90.0, 20.0)), ["90,-135"]);
        assert!(boxed(pt(1.0, 0.0), pt(0.0, 1.0)).is_empty());
        let near = |c, r| {
            texts(
                &a,
                Predicate::Near {
                    center: c,
                    radius_m: r,
                },
            )
        };
        assert_eq!(near(pt(0.0, 179.99), 3000.0), ["0,-179.99", "0,179.99"]);
        assert_eq!(near(pt(89.9, 45.0), 20_000.0), ["90,-135"]);
        assert_eq!(near(pt(0.0, 0.0), 1e9).len(), 5);
    }
}
