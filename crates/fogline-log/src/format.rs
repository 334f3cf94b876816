//! Record encoding and validation: pure functions over byte slices, no I/O.
//!
//! A record (all integers little-endian, no padding):
//!
//! ```text
//! 0   u32  len          bytes after this field: 32 + topic_len + headers_len + payload_len
//! 4   u32  crc          CRC-32 (IEEE, crc32fast) of bytes [8, 4 + len)
//! 8   u64  offset       this record's offset in the log
//! 16  u64  timestamp    microseconds since the UNIX epoch
//! 24  u32  topic_len
//! 28  u32  headers_len
//! 32  u32  payload_len
//! 36  topic | headers | payload
//! ```
//!
//! A `len` of zero marks the end of data (segment files are preallocated with zeros).
//!
//! A record with an empty topic is a *loss marker*: it stands for the offsets from its own
//! up to the next record's (or, last in a sealed segment, up to the next segment's base),
//! whose records were damaged and dropped by recovery. Every way into the log refuses an
//! empty topic, so no real record is ever read as one. Its payload is zeros that fill the
//! damaged bytes it replaces.
//!
//! Finding records again after damage needs nothing more than the fields above: a record
//! starts where a length agrees with the three field lengths, the offset lies after the last
//! good one (and before the next segment), the timestamp does not go back, and the CRC
//! matches. [`resync`] looks for the first such position; the CRC is the judge.

use serde::Serialize;
use std::fmt;
use std::ops::Range;

/// Bytes before the topic: len, crc, offset, timestamp and the three lengths.
pub const RECORD_HEADER: usize = 36;
/// The part of `len` that is not topic/headers/payload.
const FIXED_BODY: u32 = 32;

/// Bytes that `count` records on a `topic_len`-byte topic take in the log, with `content`
/// bytes of headers and payloads between them (the sum of their [`encoded_len`]).
pub fn records_len(count: usize, topic_len: usize, content: usize) -> usize {
    count
        .saturating_mul(RECORD_HEADER.saturating_add(topic_len))
        .saturating_add(content)
}

/// Encoded size of a record with these field lengths, or `None` if it cannot be represented.
pub fn encoded_len(topic: usize, headers: usize, payload: usize) -> Option<usize> {
    let size = RECORD_HEADER
        .checked_add(topic)?
        .checked_add(headers)?
        .checked_add(payload)?;
    u32::try_from(size - 4).ok().map(|_| size)
}

/// Writes one record into `dst`, which must be exactly `encoded_len(..)` bytes long.
///
/// The body is written first and the length last, so a record torn by a crash most often reads
/// as "end of data"; the CRC catches every other tear.
#[inline]
pub fn encode(
    dst: &mut [u8],
    offset: u64,
    timestamp: u64,
    topic: &[u8],
    headers: &[u8],
    payload: &[u8],
) {
    let t_end = RECORD_HEADER + topic.len();
    let h_end = t_end + headers.len();
    dst[8..16].copy_from_slice(&offset.to_le_bytes());
    dst[16..24].copy_from_slice(&timestamp.to_le_bytes());
    dst[24..28].copy_from_slice(&(topic.len() as u32).to_le_bytes());
    dst[28..32].copy_from_slice(&(headers.len() as u32).to_le_bytes());
    dst[32..36].copy_from_slice(&(payload.len() as u32).to_le_bytes());
    dst[RECORD_HEADER..t_end].copy_from_slice(topic);
    dst[t_end..h_end].copy_from_slice(headers);
    dst[h_end..].copy_from_slice(payload);
    let crc = crc32fast::hash(&dst[8..]);
    dst[4..8].copy_from_slice(&crc.to_le_bytes());
    let len = (dst.len() - 4) as u32;
    dst[0..4].copy_from_slice(&len.to_le_bytes());
}

/// What was wrong at the point where a segment stopped being valid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Damage {
    /// The record claims more bytes than the segment holds.
    Truncated {
        /// Bytes the record needs from its start.
        needed: u64,
        /// Bytes left in the segment from the record's start.
        available: u64,
    },
    /// The length field is too small or disagrees with the field lengths.
    BadLength {
        /// The stored length.
        len: u32,
    },
    /// The CRC does not match the record's bytes.
    BadCrc {
        /// The stored CRC.
        stored: u32,
        /// The CRC of the bytes found.
        computed: u32,
    },
    /// The record's offset is not the next one.
    WrongOffset {
        /// The offset expected at this position.
        expected: u64,
        /// The offset stored.
        found: u64,
    },
    /// The record's timestamp is older than its predecessor's.
    TimeBackwards {
        /// The previous record's timestamp.
        previous: u64,
        /// This record's timestamp.
        found: u64,
    },
    /// Non-zero bytes after the end-of-data marker.
    TrailingGarbage,
    /// Zeros where a record should start, with valid records after them (pages lost out
    /// of order, or zeroed).
    Zeroed,
    /// A sealed segment's data ends before the offsets reach the next segment's base.
    EndsEarly {
        /// Base offset of the next segment.
        next_base: u64,
    },
    /// The segment holds offsets that belong to the next segment.
    Overlap {
        /// Base offset of the next segment.
        next_base: u64,
    },
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Damage::Truncated { needed, available } => {
                write!(f, "torn record: needs {needed} bytes, {available} left")
            }
            Damage::BadLength { len } => write!(f, "invalid length field {len}"),
            Damage::BadCrc { stored, computed } => {
                write!(
                    f,
                    "CRC mismatch: stored {stored:#010x}, computed {computed:#010x}"
                )
            }
            Damage::WrongOffset { expected, found } => {
                write!(f, "offset {found} where {expected} was expected")
            }
            Damage::TimeBackwards { previous, found } => {
                write!(f, "timestamp {found} older than previous {previous}")
            }
            Damage::TrailingGarbage => write!(f, "non-zero bytes after the end of data"),
            Damage::Zeroed => write!(f, "zeros where a record should start"),
            Damage::EndsEarly { next_base } => {
                write!(
                    f,
                    "data ends before the next segment's base offset {next_base}"
                )
            }
            Damage::Overlap { next_base } => {
                write!(
                    f,
                    "records at or past the next segment's base offset {next_base}"
                )
            }
        }
    }
}

/// The fixed fields of one record, as read from a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Total encoded size (4 + len).
    pub size: usize,
    /// The stored offset.
    pub offset: u64,
    /// The stored timestamp.
    pub timestamp: u64,
    /// Topic length.
    pub topic_len: usize,
    /// Headers length.
    pub headers_len: usize,
}

impl Header {
    /// A loss marker (see the module docs).
    pub fn is_marker(&self) -> bool {
        self.topic_len == 0
    }
}

/// Writes a loss marker for offsets from `offset` into `dst` (at least [`RECORD_HEADER`]
/// bytes; the rest becomes zero payload).
pub fn encode_marker(dst: &mut [u8], offset: u64, timestamp: u64) {
    debug_assert!(dst.len() >= RECORD_HEADER);
    dst[RECORD_HEADER..].fill(0);
    dst[8..16].copy_from_slice(&offset.to_le_bytes());
    dst[16..24].copy_from_slice(&timestamp.to_le_bytes());
    dst[24..32].fill(0);
    let payload_len = (dst.len() - RECORD_HEADER) as u32;
    dst[32..36].copy_from_slice(&payload_len.to_le_bytes());
    let crc = crc32fast::hash(&dst[8..]);
    dst[4..8].copy_from_slice(&crc.to_le_bytes());
    let len = (dst.len() - 4) as u32;
    dst[0..4].copy_from_slice(&len.to_le_bytes());
}

fn u32_at(buf: &[u8], pos: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&buf[pos..pos + 4]);
    u32::from_le_bytes(b)
}

fn u64_at(buf: &[u8], pos: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&buf[pos..pos + 8]);
    u64::from_le_bytes(b)
}

/// Reads the length field at `pos`: `None` means end of data (zero, or fewer than 4 bytes left).
pub fn peek_len(buf: &[u8], pos: usize) -> Option<u32> {
    if buf.len().saturating_sub(pos) < 4 {
        return None;
    }
    match u32_at(buf, pos) {
        0 => None,
        len => Some(len),
    }
}

/// Parses the fixed fields of the record at `pos` and checks that its lengths are consistent and
/// inside `buf`. Does not check the CRC.
pub fn parse_header(buf: &[u8], pos: usize) -> Result<Header, Damage> {
    let available = buf.len().saturating_sub(pos) as u64;
    if available < 4 {
        return Err(Damage::Truncated {
            needed: 4,
            available,
        });
    }
    let len = u32_at(buf, pos);
    if len < FIXED_BODY {
        return Err(Damage::BadLength { len });
    }
    let size = len as u64 + 4;
    if size > available {
        return Err(Damage::Truncated {
            needed: size,
            available,
        });
    }
    let topic_len = u32_at(buf, pos + 24) as u64;
    let headers_len = u32_at(buf, pos + 28) as u64;
    let payload_len = u32_at(buf, pos + 32) as u64;
    if FIXED_BODY as u64 + topic_len + headers_len + payload_len != len as u64 {
        return Err(Damage::BadLength { len });
    }
    Ok(Header {
        size: size as usize,
        offset: u64_at(buf, pos + 8),
        timestamp: u64_at(buf, pos + 16),
        topic_len: topic_len as usize,
        headers_len: headers_len as usize,
    })
}

/// Fully validates the record at `pos`: structure, CRC, an offset in `offsets` (one offset
/// after an ordinary record; any later one after a loss marker) and timestamp order.
pub fn check_record(
    buf: &[u8],
    pos: usize,
    offsets: Range<u64>,
    min_timestamp: u64,
) -> Result<Header, Damage> {
    let h = parse_header(buf, pos)?;
    let stored = u32_at(buf, pos + 4);
    let computed = crc32fast::hash(&buf[pos + 8..pos + h.size]);
    if stored != computed {
        return Err(Damage::BadCrc { stored, computed });
    }
    if !offsets.contains(&h.offset) {
        return Err(Damage::WrongOffset {
            expected: offsets.start,
            found: h.offset,
        });
    }
    if h.timestamp < min_timestamp {
        return Err(Damage::TimeBackwards {
            previous: min_timestamp,
            found: h.timestamp,
        });
    }
    Ok(h)
}

/// The first position at or after `from` where a valid record starts whose offset lies in
/// `offsets` and whose timestamp is at least `min_timestamp`: where reading can go on after
/// damage. Cheap checks (length consistency, offset range, timestamp) come before the CRC,
/// so a scan over damaged or zeroed bytes costs little per byte.
pub fn resync(
    buf: &[u8],
    from: usize,
    offsets: Range<u64>,
    min_timestamp: u64,
) -> Option<(usize, Header)> {
    let last = buf.len().checked_sub(RECORD_HEADER)?;
    (from..=last).find_map(|pos| {
        let len = u32_at(buf, pos);
        if len < FIXED_BODY || !offsets.contains(&u64_at(buf, pos + 8)) {
            return None;
        }
        if u64_at(buf, pos + 16) < min_timestamp {
            return None;
        }
        check_record(buf, pos, offsets.clone(), min_timestamp)
            .ok()
            .map(|h| (pos, h))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(offset: u64, ts: u64, t: &[u8], h: &[u8], p: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; encoded_len(t.len(), h.len(), p.len()).unwrap()];
        encode(&mut v, offset, ts, t, h, p);
        v
    }

    #[test]
    fn golden_bytes() {
        let v = record(5, 7, b"t", b"", b"xy");
        assert_eq!(v.len(), 39);
        assert_eq!(&v[0..4], &35u32.to_le_bytes());
        assert_eq!(&v[8..16], &5u64.to_le_bytes());
        assert_eq!(&v[16..24], &7u64.to_le_bytes());
        assert_eq!(&v[24..36], &[1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0]);
        assert_eq!(&v[36..], b"txy");
        assert_eq!(&v[4..8], &crc32fast::hash(&v[8..]).to_le_bytes());
    }

    #[test]
    fn round_trip_and_checks() {
        let v = record(9, 100, b"a/b", b"hh", b"payload");
        let h = check_record(&v, 0, 9..10, 100).unwrap();
        assert_eq!((h.size, h.offset, h.timestamp), (v.len(), 9, 100));
        assert_eq!((h.topic_len, h.headers_len), (3, 2));
        assert!(matches!(
            check_record(&v, 0, 8..9, 0),
            Err(Damage::WrongOffset { .. })
        ));
        assert!(matches!(
            check_record(&v, 0, 9..10, 101),
            Err(Damage::TimeBackwards { .. })
        ));
        let mut bad = v.clone();
        bad[40] ^= 1;
        assert!(matches!(
            check_record(&bad, 0, 9..10, 0),
            Err(Damage::BadCrc { .. })
        ));
        assert!(matches!(
            check_record(&v[..v.len() - 1], 0, 9..10, 0),
            Err(Damage::Truncated { .. })
        ));
        let mut short = v.clone();
        short[0..4].copy_from_slice(&3u32.to_le_bytes());
        assert!(matches!(
            check_record(&short, 0, 9..10, 0),
            Err(Damage::BadLength { len: 3 })
        ));
    }

    #[test]
    fn positions_near_the_end_are_errors_not_panics() {
        let v = record(0, 0, b"t", b"", b"p");
        for pos in v.len() - 3..v.len() + 2 {
            assert!(matches!(
                check_record(&v, pos, 0..1, 0),
                Err(Damage::Truncated { .. })
            ));
        }
    }

    #[test]
    fn markers_are_records_with_an_empty_topic() {
        let mut m = vec![0xaa; 50];
        encode_marker(&mut m, 12, 7);
        let h = check_record(&m, 0, 12..13, 7).unwrap();
        assert!(h.is_marker());
        assert_eq!((h.size, h.offset, h.timestamp), (50, 12, 7));
        assert!(m[RECORD_HEADER..].iter().all(|&b| b == 0));
        let v = record(12, 7, b"t", b"", b"");
        assert!(!check_record(&v, 0, 12..13, 7).unwrap().is_marker());
    }

    #[test]
    fn resync_finds_the_next_valid_record_after_damage() {
        let mut buf = record(3, 10, b"a", b"", b"one");
        let second = buf.len();
        buf.extend(record(4, 11, b"a", b"", b"two"));
        buf.extend(record(5, 12, b"a", b"", b"three"));
        assert_eq!(resync(&buf, 0, 3..u64::MAX, 0).unwrap().0, 0);
        buf[20] ^= 1;
        let (pos, h) = resync(&buf, 0, 4..u64::MAX, 10).unwrap();
        assert_eq!((pos, h.offset), (second, 4));
        // An offset range or timestamp the record does not meet skips it.
        assert_eq!(resync(&buf, 0, 5..u64::MAX, 0).unwrap().1.offset, 5);
        assert_eq!(resync(&buf, 0, 4..5, 12), None);
        assert_eq!(resync(&buf, 1, 0..3, 0), None);
        assert_eq!(resync(&buf[..10], 0, 0..9, 0), None);
    }

    #[test]
    fn end_of_data() {
        assert_eq!(peek_len(&[0, 0, 0, 0, 9], 0), None);
        assert_eq!(peek_len(&[1, 0, 0], 0), None);
        assert_eq!(peek_len(&[1, 0, 0, 0], 0), Some(1));
    }
}
