//! Record-by-record validation of a whole segment: shared by recovery and `verify`.
//!
//! Damage inside the data does not end a scan: it finds the next valid record
//! ([`resync`]) and notes the damaged stretch between, so that recovery drops only the
//! records that were damaged. Only damage with no valid record after it ends the data.

use crate::format::{check_record, parse_header, peek_len, resync, Damage, RECORD_HEADER};
use crate::index::SparseIndex;

/// A damaged stretch inside a segment's data, with a valid record after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    /// First damaged byte (a loss marker's, when the damage follows one: the two merge).
    pub pos: usize,
    /// The next valid record's position.
    pub end_pos: usize,
    /// First offset lost.
    pub first: u64,
    /// The next valid record's offset.
    pub end: u64,
    /// The timestamp a marker for the stretch takes: the previous record's (the next
    /// record's when none came before).
    pub timestamp: u64,
    /// What was wrong at the first damaged byte.
    pub damage: Damage,
}

/// A loss marker found in the data: offsets `[first, end)` were lost and marked earlier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marked {
    /// The marker's position.
    pub pos: usize,
    /// First offset it stands for.
    pub first: u64,
    /// The offset after the last one it stands for.
    pub end: u64,
}

/// What a full scan of a segment found.
#[derive(Debug, Clone)]
pub struct Scan {
    /// Offsets the data spans: the next offset is `base + count`. Offsets lost inside the
    /// data (marked or not) count; see [`Scan::records`].
    pub count: u64,
    /// End of the last valid record: everything from here on is not data.
    pub end: usize,
    /// First and last valid timestamps (0 when `count == 0`).
    pub first_ts: u64,
    /// Last valid timestamp.
    pub last_ts: u64,
    /// Position of the last valid record.
    pub last_pos: usize,
    /// The index the valid records (markers included) produce.
    pub index: SparseIndex,
    /// Damaged stretches inside the data, in order.
    pub lost: Vec<Lost>,
    /// Loss markers, in order.
    pub marked: Vec<Marked>,
    /// Why the data ended before an end-of-data marker, if it did; also set to
    /// `TrailingGarbage` when the bytes after the marker are not all zero.
    pub damage: Option<Damage>,
    /// One past the last non-zero byte at or after `end` (`end` if there is none): the bytes
    /// recovery drops.
    pub dirty_end: usize,
}

impl Scan {
    /// Bytes past the valid data that are not zero-filled.
    pub fn dropped_bytes(&self) -> u64 {
        (self.dirty_end - self.end) as u64
    }

    /// Intact records: offsets spanned less those lost.
    pub fn records(&self) -> u64 {
        self.count - self.marked_offsets() - self.lost_offsets()
    }

    /// Offsets that loss markers stand for.
    pub fn marked_offsets(&self) -> u64 {
        self.marked.iter().map(|m| m.end - m.first).sum()
    }

    /// Offsets of the damaged stretches not marked yet.
    pub fn lost_offsets(&self) -> u64 {
        self.lost.iter().map(|l| l.end - l.first).sum()
    }

    /// A sealed segment's scan (from `base`) that needs no repair: nothing damaged or lost,
    /// and every offset up to the next segment's `next_base` there.
    pub fn is_whole(&self, base: u64, next_base: u64) -> bool {
        self.lost.is_empty() && self.damage.is_none() && base + self.count == next_base
    }
}

/// A marker whose span ends at the next record, and the scan's state before it (to take it
/// back when nothing follows it in an active segment).
struct Pending {
    pos: usize,
    first: u64,
    last_ts: u64,
    last_pos: usize,
    entries: usize,
    any: bool,
}

/// Scans `buf` as a segment whose first record has offset `base`. `limit` is the next
/// segment's base for a sealed segment (records at or past it are damage; a marker at the
/// end stands for the offsets up to it); `None` for the active segment (a marker at the end
/// stands for nothing yet, and is dropped with the tail).
pub fn scan(buf: &[u8], base: u64, limit: Option<u64>) -> Scan {
    scan_to(buf, base, limit, buf.len())
}

/// [`scan`], told that every byte of `buf` at or past `zero_from` is zero (a hole of the
/// file, see `recovery::data_end`): the search for stray bytes past the data stops there,
/// instead of reading the whole preallocated tail of an active segment.
pub fn scan_to(buf: &[u8], base: u64, limit: Option<u64>, zero_from: usize) -> Scan {
    let zero_from = zero_from.min(buf.len());
    // The last non-zero byte of `buf[from..]`, relative to `from`.
    let last_nonzero = |from: usize| buf[from..zero_from.max(from)].iter().rposition(|&b| b != 0);
    let cap = limit.unwrap_or(u64::MAX);
    let mut s = Scan {
        count: 0,
        end: 0,
        first_ts: 0,
        last_ts: 0,
        last_pos: 0,
        index: SparseIndex::with_capacity(buf.len()),
        lost: Vec::new(),
        marked: Vec::new(),
        damage: None,
        dirty_end: 0,
    };
    let mut pos = 0usize;
    let mut next = base;
    let mut any = false;
    let mut marker: Option<Pending> = None;
    // One past the last non-zero byte, once an end-of-data marker made us look.
    let mut dirty: Option<usize> = None;
    loop {
        let checked = if peek_len(buf, pos).is_none() {
            let Some(last) = last_nonzero(pos) else {
                dirty = Some(pos);
                break;
            };
            dirty = Some(pos + last + 1);
            Err(if buf.len() - pos >= 4 {
                Damage::Zeroed
            } else {
                Damage::TrailingGarbage
            })
        } else if marker.is_none() && next >= cap {
            s.damage = Some(Damage::Overlap { next_base: cap });
            break;
        } else {
            let offsets = match &marker {
                Some(m) => m.first + 1..cap,
                None => next..next + 1,
            };
            check_record(buf, pos, offsets, s.last_ts)
        };
        match checked {
            Ok(h) => {
                if let Some(m) = marker.take() {
                    s.marked.push(Marked {
                        pos: m.pos,
                        first: m.first,
                        end: h.offset,
                    });
                }
                if h.is_marker() {
                    marker = Some(Pending {
                        pos,
                        first: h.offset,
                        last_ts: s.last_ts,
                        last_pos: s.last_pos,
                        entries: s.index.entries().len(),
                        any,
                    });
                    next = h.offset;
                } else {
                    next = h.offset + 1;
                }
                s.index.observe(h.offset - base, pos, h.timestamp);
                if !any {
                    s.first_ts = h.timestamp;
                    any = true;
                }
                s.last_ts = h.timestamp;
                s.last_pos = pos;
                pos += h.size;
                s.end = pos;
                dirty = None;
            }
            Err(damage) => {
                let (start, first) = marker.as_ref().map_or((pos, next), |m| (m.pos, m.first));
                match find_next(buf, pos, start, first, cap, s.last_ts) {
                    Some((at, h)) => {
                        s.lost.push(Lost {
                            pos: start,
                            end_pos: at,
                            first,
                            end: h.offset,
                            timestamp: if any { s.last_ts } else { h.timestamp },
                            damage,
                        });
                        marker = None;
                        next = h.offset;
                        pos = at;
                        dirty = None;
                    }
                    None => {
                        s.damage = Some(if damage == Damage::Zeroed {
                            Damage::TrailingGarbage
                        } else {
                            damage
                        });
                        break;
                    }
                }
            }
        }
    }
    if let Some(m) = marker.take() {
        match limit {
            Some(l) => {
                s.marked.push(Marked {
                    pos: m.pos,
                    first: m.first,
                    end: l,
                });
                next = l;
            }
            None => {
                // A marker the active segment ends with stands for offsets that will be
                // given out again: it goes with the tail.
                s.end = m.pos;
                s.last_ts = m.last_ts;
                s.last_pos = m.last_pos;
                s.index.truncate(m.entries);
                if !m.any {
                    s.first_ts = 0;
                }
                dirty = None;
                s.damage.get_or_insert(Damage::TrailingGarbage);
            }
        }
    }
    s.count = next - base;
    s.dirty_end = match dirty {
        Some(d) if s.end <= d => d,
        _ => last_nonzero(s.end).map_or(s.end, |i| s.end + i + 1),
    };
    if s.damage.is_none() && s.dirty_end > s.end {
        s.damage = Some(Damage::TrailingGarbage);
    }
    s
}

/// Where valid data starts again after damage at `pos`, in a stretch that starts at
/// `start` with offset `first`: the record the damaged one's own length points to when it
/// holds the next offset, else the first valid record at least a record header past
/// `start` (room for the marker that will replace the stretch) with a later offset.
fn find_next(
    buf: &[u8],
    pos: usize,
    start: usize,
    first: u64,
    cap: u64,
    min_ts: u64,
) -> Option<(usize, crate::format::Header)> {
    if let Ok(h) = parse_header(buf, pos) {
        let at = pos + h.size;
        if at - start >= RECORD_HEADER && peek_len(buf, at).is_some() {
            let want = first + 1..(first + 2).min(cap);
            if let Ok(n) = check_record(buf, at, want, min_ts) {
                return Some((at, n));
            }
        }
    }
    let from = (pos + 1).max(start + RECORD_HEADER);
    resync(buf, from, first + 1..cap, min_ts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{encode, encode_marker, encoded_len};

    fn segment(n: u64, base: u64, cap: usize) -> (Vec<u8>, Vec<usize>) {
        let mut v = vec![0u8; cap];
        let mut pos = 0;
        let mut starts = vec![];
        for i in 0..n {
            let len = encoded_len(3, 0, 10).unwrap();
            encode(
                &mut v[pos..pos + len],
                base + i,
                i,
                b"a/b",
                b"",
                b"0123456789",
            );
            starts.push(pos);
            pos += len;
        }
        starts.push(pos);
        (v, starts)
    }

    #[test]
    fn clean_segment() {
        let (v, starts) = segment(10, 100, 1000);
        let s = scan(&v, 100, None);
        assert_eq!((s.count, s.end, s.damage.clone()), (10, starts[10], None));
        assert_eq!((s.first_ts, s.last_ts, s.last_pos), (0, 9, starts[9]));
        assert_eq!((s.dropped_bytes(), s.records()), (0, 10));
        let exact = scan(&v[..starts[10]], 100, None);
        assert_eq!((exact.count, exact.damage), (10, None));
    }

    #[test]
    fn garbage_after_end() {
        let (mut v, starts) = segment(3, 0, 500);
        v[starts[3] + 10] = 1;
        let s = scan(&v, 0, None);
        assert_eq!(s.count, 3);
        assert_eq!(s.damage, Some(Damage::TrailingGarbage));
        assert_eq!(s.dropped_bytes(), 11);
    }

    #[test]
    fn overlap_limit() {
        let (v, starts) = segment(5, 0, 500);
        let s = scan(&v, 0, Some(3));
        assert_eq!((s.count, s.end), (3, starts[3]));
        assert_eq!(s.damage, Some(Damage::Overlap { next_base: 3 }));
        assert_eq!(s.dirty_end, starts[5]);
    }

    #[test]
    fn damage_in_the_middle_loses_only_the_damaged_records() {
        let (v, starts) = segment(10, 100, 1000);
        // A flipped payload byte: the record's own length leads to the next one.
        let mut a = v.clone();
        a[starts[4] + 40] ^= 1;
        let s = scan(&a, 100, None);
        assert_eq!((s.count, s.records(), s.damage.clone()), (10, 9, None));
        let l = &s.lost[..];
        assert_eq!(l.len(), 1);
        assert_eq!((l[0].pos, l[0].end_pos), (starts[4], starts[5]));
        assert_eq!((l[0].first, l[0].end, l[0].timestamp), (104, 105, 3));
        assert!(matches!(l[0].damage, Damage::BadCrc { .. }));
        // A broken length field and a zeroed stretch over three records: found again by
        // searching, byte by byte.
        let mut b = v.clone();
        b[starts[2]] ^= 0x40;
        b[starts[6]..starts[9]].fill(0);
        let s = scan(&b, 100, None);
        assert_eq!((s.count, s.records(), s.end), (10, 6, starts[10]));
        let got: Vec<_> = s.lost.iter().map(|l| (l.first, l.end)).collect();
        assert_eq!(got, vec![(102, 103), (106, 109)]);
        assert_eq!(s.lost[1].damage, Damage::Zeroed);
        // The first record damaged: nothing before it to take a timestamp from.
        let mut c = v.clone();
        c[starts[0] + 10] ^= 1;
        let s = scan(&c, 100, None);
        assert_eq!(
            (s.lost[0].first, s.lost[0].timestamp, s.first_ts),
            (100, 1, 1)
        );
    }

    #[test]
    fn markers_span_to_the_next_record_or_the_next_segment() {
        let (mut v, starts) = segment(10, 0, 1000);
        encode_marker(&mut v[starts[2]..starts[5]], 2, 1);
        let s = scan(&v, 0, Some(10));
        assert_eq!((s.count, s.records(), s.damage.clone()), (10, 7, None));
        assert_eq!(
            s.marked,
            vec![Marked {
                pos: starts[2],
                first: 2,
                end: 5
            }]
        );
        // Last in a sealed segment, a marker stands for the offsets up to the next base.
        encode_marker(&mut v[starts[8]..starts[10]], 8, 7);
        let sealed = scan(&v[..starts[10]], 0, Some(12));
        assert_eq!(
            (sealed.count, sealed.records(), sealed.end),
            (12, 5, starts[10])
        );
        // Last in the active segment, it is taken back with the tail.
        let active = scan(&v, 0, None);
        assert_eq!((active.count, active.end), (8, starts[8]));
        assert_eq!(active.last_pos, starts[7]);
        assert_eq!(active.damage, Some(Damage::TrailingGarbage));
        assert!(
            active.dirty_end > starts[8],
            "the marker is dropped with the tail"
        );
    }

    #[test]
    fn damage_after_a_marker_merges_with_it() {
        let (mut v, starts) = segment(10, 0, 1000);
        encode_marker(&mut v[starts[2]..starts[3]], 2, 1);
        v[starts[3] + 40] ^= 1;
        let s = scan(&v, 0, None);
        assert_eq!(s.lost.len(), 1);
        let l = &s.lost[0];
        assert_eq!(
            (l.pos, l.end_pos, l.first, l.end),
            (starts[2], starts[4], 2, 4)
        );
        assert!(s.marked.is_empty());
    }

    proptest::proptest! {
        /// Told where the zeros start, the scan finds what a full scan finds: records and
        /// stray bytes (a torn tail, garbage after it) anywhere before that point.
        #[test]
        fn scan_to_a_known_zero_tail_is_the_full_scan(
            n in 0u64..12,
            garbage in proptest::collection::vec((0usize..1200, 1u8..=255), 0..4),
            extra in 0usize..600,
        ) {
            let (mut v, _) = segment(n, 7, 1200);
            for (at, b) in garbage {
                v[at] = b;
            }
            let last = v.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
            let full = scan(&v, 7, None);
            let part = scan_to(&v, 7, None, (last + extra).min(v.len()));
            proptest::prop_assert_eq!(
                (full.count, full.end, full.dirty_end, format!("{:?}", full.damage)),
                (part.count, part.end, part.dirty_end, format!("{:?}", part.damage))
            );
        }
    }
}
