//! Record-by-record validation of a whole segment: shared by recovery and `verify`.

use crate::format::{check_record, peek_len, Damage};
use crate::index::SparseIndex;

/// What a full scan of a segment found.
#[derive(Debug, Clone)]
pub struct Scan {
    /// Valid records from the start.
    pub count: u64,
    /// End of the last valid record: everything from here on is not data.
    pub end: usize,
    /// First and last valid timestamps (0 when `count == 0`).
    pub first_ts: u64,
    /// Last valid timestamp.
    pub last_ts: u64,
    /// Position of the last valid record.
    pub last_pos: usize,
    /// The index the valid records produce.
    pub index: SparseIndex,
    /// Why the scan stopped before an end-of-data marker, if it did; also set to
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
}

/// Scans `buf` as a segment whose first record has offset `base`. Records with an offset at or
/// past `limit` (the next segment's base) are treated as damage.
pub fn scan(buf: &[u8], base: u64, limit: Option<u64>) -> Scan {
    let mut s = Scan {
        count: 0,
        end: 0,
        first_ts: 0,
        last_ts: 0,
        last_pos: 0,
        index: SparseIndex::with_capacity(buf.len()),
        damage: None,
        dirty_end: 0,
    };
    let mut pos = 0usize;
    while peek_len(buf, pos).is_some() {
        let expected = base + s.count;
        if limit.is_some_and(|l| expected >= l) {
            s.damage = Some(Damage::Overlap {
                next_base: limit.unwrap_or(expected),
            });
            break;
        }
        match check_record(buf, pos, expected, s.last_ts) {
            Ok(h) => {
                if s.count == 0 {
                    s.first_ts = h.timestamp;
                }
                s.index.observe(s.count, pos, h.timestamp);
                s.last_ts = h.timestamp;
                s.last_pos = pos;
                s.count += 1;
                pos += h.size;
            }
            Err(d) => {
                s.damage = Some(d);
                break;
            }
        }
    }
    s.end = pos;
    s.dirty_end = buf[pos..]
        .iter()
        .rposition(|&b| b != 0)
        .map_or(pos, |i| pos + i + 1);
    if s.damage.is_none() && s.dirty_end > s.end {
        s.damage = Some(Damage::TrailingGarbage);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{encode, encoded_len};

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
        assert_eq!(s.dropped_bytes(), 0);
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
}
