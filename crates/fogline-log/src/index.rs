//! The per-segment sparse index (offset -> position, and time) and its `.idx` file.
//!
//! An entry is taken for the first record and then for the first record starting at least
//! [`INDEX_INTERVAL`] bytes after the previous entry's record, so the rule is a pure function of
//! the records: rebuilding an index by scanning yields exactly the persisted one. Lookups binary
//! search the entries, then walk at most about `INDEX_INTERVAL` bytes of records.
//!
//! `.idx` file (little-endian), written only for sealed segments:
//!
//! ```text
//! 0   [u8; 8]  magic "FLOGIDX2"
//! 8   u64      base offset (must match the segment file name)
//! 16  u64      offsets the segment spans (its next offset less its base)
//! 24  u64      data length (must equal the segment file's length)
//! 32  u64      first timestamp
//! 40  u64      last timestamp
//! 48  u64      position of the last record
//! 56  u64      offsets its loss markers stand for
//! 64  u32      entry count n
//! 68  n x { u32 offset - base, u32 position, u64 timestamp }
//! ..  u32      CRC-32 of everything before it
//! ```
//!
//! Loss markers (see the `format` module) are entries like any record. An index of an
//! older layout (`FLOGIDX1`) does not decode, so its segment is scanned and re-indexed once.

/// Bytes of records between two index entries.
pub const INDEX_INTERVAL: usize = 4096;

const MAGIC: &[u8; 8] = b"FLOGIDX2";
const FIXED: usize = 68;
const ENTRY: usize = 16;

/// One index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Entry {
    /// Offset relative to the segment's base.
    pub rel: u32,
    /// Byte position of the record in the segment.
    pub pos: u32,
    /// The record's timestamp.
    pub ts: u64,
}

/// Sparse index of one segment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SparseIndex {
    entries: Vec<Entry>,
    next_pos: usize,
}

impl SparseIndex {
    /// An empty index with room for a segment of `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> SparseIndex {
        SparseIndex {
            entries: Vec::with_capacity(capacity / INDEX_INTERVAL + 1),
            next_pos: 0,
        }
    }

    /// Called for every record in order; keeps the ones the interval rule selects.
    #[inline]
    pub fn observe(&mut self, rel: u64, pos: usize, ts: u64) {
        if pos >= self.next_pos {
            self.entries.push(Entry {
                rel: rel as u32,
                pos: pos as u32,
                ts,
            });
            self.next_pos = pos + INDEX_INTERVAL;
        }
    }

    /// Keeps the first `n` entries (a scan taking back the records after them).
    pub fn truncate(&mut self, n: usize) {
        self.entries.truncate(n);
        self.next_pos = self
            .entries
            .last()
            .map_or(0, |e| e.pos as usize + INDEX_INTERVAL);
    }

    /// The entries, in record order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The last entry at or before relative offset `rel`.
    pub fn floor_offset(&self, rel: u64) -> Option<Entry> {
        let i = self.entries.partition_point(|e| u64::from(e.rel) <= rel);
        i.checked_sub(1).map(|i| self.entries[i])
    }

    /// The entry to start walking from to find the first record with timestamp >= `ts`.
    pub fn floor_time(&self, ts: u64) -> Option<Entry> {
        let i = self.entries.partition_point(|e| e.ts < ts);
        self.entries.get(i.saturating_sub(1)).copied()
    }
}

/// The summary persisted with a sealed segment's index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFile {
    /// Base offset.
    pub base: u64,
    /// Offsets the segment spans.
    pub count: u64,
    /// Offsets its loss markers stand for.
    pub lost: u64,
    /// Segment data length.
    pub data_len: u64,
    /// First record's timestamp.
    pub first_ts: u64,
    /// Last record's timestamp.
    pub last_ts: u64,
    /// Position of the last record.
    pub last_pos: u64,
    /// The sparse index.
    pub index: SparseIndex,
}

impl IndexFile {
    /// Serialises to the `.idx` layout.
    pub fn encode(&self) -> Vec<u8> {
        let entries = self.index.entries();
        let mut v = Vec::with_capacity(FIXED + entries.len() * ENTRY + 4);
        v.extend_from_slice(MAGIC);
        for x in [
            self.base,
            self.count,
            self.data_len,
            self.first_ts,
            self.last_ts,
            self.last_pos,
            self.lost,
        ] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for e in entries {
            v.extend_from_slice(&e.rel.to_le_bytes());
            v.extend_from_slice(&e.pos.to_le_bytes());
            v.extend_from_slice(&e.ts.to_le_bytes());
        }
        let crc = crc32fast::hash(&v);
        v.extend_from_slice(&crc.to_le_bytes());
        v
    }

    /// Parses an `.idx` file, checking magic, length, CRC and that the entries are ordered and
    /// inside the segment. Returns a reason on failure.
    pub fn decode(buf: &[u8]) -> Result<IndexFile, &'static str> {
        if buf.len() < FIXED + 4 || &buf[..8] != MAGIC {
            return Err("bad magic or too short");
        }
        let u64_at = |p: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[p..p + 8]);
            u64::from_le_bytes(b)
        };
        let u32_at = |p: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&buf[p..p + 4]);
            u32::from_le_bytes(b)
        };
        let n = u32_at(64) as usize;
        if buf.len() != FIXED + n * ENTRY + 4 {
            return Err("length does not match entry count");
        }
        let body = buf.len() - 4;
        if crc32fast::hash(&buf[..body]) != u32_at(body) {
            return Err("CRC mismatch");
        }
        let f = IndexFile {
            base: u64_at(8),
            count: u64_at(16),
            data_len: u64_at(24),
            first_ts: u64_at(32),
            last_ts: u64_at(40),
            last_pos: u64_at(48),
            lost: u64_at(56),
            index: SparseIndex {
                entries: (0..n)
                    .map(|i| {
                        let p = FIXED + i * ENTRY;
                        Entry {
                            rel: u32_at(p),
                            pos: u32_at(p + 4),
                            ts: u64_at(p + 8),
                        }
                    })
                    .collect(),
                next_pos: 0,
            },
        };
        f.check()?;
        let mut f = f;
        // Restore the interval state so a decoded index equals a rebuilt one.
        f.index.next_pos = f.index.entries[f.index.entries.len() - 1].pos as usize + INDEX_INTERVAL;
        Ok(f)
    }

    fn check(&self) -> Result<(), &'static str> {
        let e = self.index.entries();
        if self.count == 0
            || e.is_empty()
            || e[0].rel != 0
            || e[0].pos != 0
            || self.lost > self.count
        {
            return Err("empty or not starting at the first record");
        }
        if e[0].ts != self.first_ts || self.first_ts > self.last_ts {
            return Err("timestamps inconsistent");
        }
        let ordered = e.windows(2).all(|w| {
            w[1].rel > w[0].rel
                && w[1].pos as usize >= w[0].pos as usize + INDEX_INTERVAL
                && w[1].ts >= w[0].ts
        });
        let last = e[e.len() - 1];
        if !ordered
            || u64::from(last.rel) >= self.count
            || u64::from(last.pos) > self.last_pos
            || last.ts > self.last_ts
            || self.last_pos >= self.data_len
        {
            return Err("entries out of order or outside the segment");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> IndexFile {
        let mut index = SparseIndex::with_capacity(10_000);
        for (i, pos) in [0usize, 100, 4096, 5000, 8200].into_iter().enumerate() {
            index.observe(i as u64, pos, 10 + i as u64);
        }
        IndexFile {
            base: 7,
            count: 5,
            data_len: 9000,
            first_ts: 10,
            last_ts: 14,
            last_pos: 8200,
            lost: 0,
            index,
        }
    }

    #[test]
    fn interval_rule() {
        let f = sample();
        let pos: Vec<u32> = f.index.entries().iter().map(|e| e.pos).collect();
        assert_eq!(pos, vec![0, 4096, 8200]);
        assert_eq!(f.index.floor_offset(3).unwrap().pos, 4096);
        assert_eq!(f.index.floor_offset(0).unwrap().pos, 0);
        assert_eq!(f.index.floor_time(12).unwrap().pos, 0);
        assert_eq!(f.index.floor_time(13).unwrap().pos, 4096);
        assert_eq!(f.index.floor_time(99).unwrap().pos, 8200);
    }

    #[test]
    fn round_trip() {
        let f = sample();
        let bytes = f.encode();
        let g = IndexFile::decode(&bytes).unwrap();
        assert_eq!(g, f);
    }

    #[test]
    fn rejects_damage() {
        let bytes = sample().encode();
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            assert!(IndexFile::decode(&b).is_err(), "flip at {i}");
            assert!(IndexFile::decode(&bytes[..i]).is_err(), "cut at {i}");
        }
    }
}
