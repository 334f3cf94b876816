//! Stored-record blocks of `Records` frames (consumer deliveries).
//!
//! Layout: `count` x `{offset: u64, timestamp: u64, delivery_count: u16,
//! topic: str16, headers: blob32, payload: blob32}`, running to the end of
//! the frame. Unlike a publish block each record carries its own topic,
//! because a consumer's filter may match many topics of one stream.

use bytes::{BufMut, Bytes, BytesMut};

use crate::codec::{patch_u32, put_blob32, put_str16, SliceCursor};
use crate::error::WireError;
use crate::kind;
use crate::text::Str;

/// Smallest encoded stored record.
const MIN_STORED: usize = 8 + 8 + 2 + 2 + 4 + 4;

/// One record delivered to a consumer, as zero-copy slices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredRecord {
    /// Position in the stream.
    pub offset: u64,
    /// Microseconds since the UNIX epoch.
    pub timestamp: u64,
    /// 1 on first delivery, +1 on each redelivery.
    pub delivery_count: u16,
    /// The record's topic.
    pub topic: Str,
    /// The header block (see [`crate::Headers`]).
    pub headers: Bytes,
    /// The payload.
    pub payload: Bytes,
}

/// Borrowed fields of a stored record, for encoding.
#[derive(Clone, Copy, Debug)]
pub struct StoredRecordRef<'a> {
    /// Position in the stream.
    pub offset: u64,
    /// Microseconds since the UNIX epoch.
    pub timestamp: u64,
    /// 1 on first delivery, +1 on each redelivery.
    pub delivery_count: u16,
    /// The record's topic.
    pub topic: &'a str,
    /// The header block.
    pub headers: &'a [u8],
    /// The payload.
    pub payload: &'a [u8],
}

/// A validated block of `count` stored records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoredBlock {
    count: u32,
    bytes: Bytes,
}

impl StoredBlock {
    /// Validates that `bytes` holds exactly `count` stored records.
    ///
    /// # Errors
    /// [`WireError::Malformed`] (kind 0) when it does not or a topic is not UTF-8.
    pub fn parse(count: u32, bytes: Bytes) -> Result<StoredBlock, WireError> {
        StoredBlock::parse_in(0, count, bytes)
    }

    pub(crate) fn parse_in(kind: u8, count: u32, bytes: Bytes) -> Result<StoredBlock, WireError> {
        let bad = |reason| WireError::Malformed { kind, reason };
        if (count as usize).saturating_mul(MIN_STORED) > bytes.len() {
            return Err(bad("record count exceeds block"));
        }
        let mut cur = SliceCursor::new(&bytes);
        for _ in 0..count {
            cur.skip(18).ok_or(bad("stored record truncated"))?;
            let (ts, te) = cur.str16().ok_or(bad("stored record topic truncated"))?;
            if std::str::from_utf8(&bytes[ts..te]).is_err() {
                return Err(bad("string is not UTF-8"));
            }
            cur.blob32().ok_or(bad("stored record headers truncated"))?;
            cur.blob32().ok_or(bad("stored record payload truncated"))?;
        }
        if cur.pos != bytes.len() {
            return Err(bad("trailing bytes after records"));
        }
        Ok(StoredBlock { count, bytes })
    }

    /// A block built from borrowed records.
    ///
    /// # Errors
    /// [`WireError::TooLong`] if a field overflows its length field.
    pub fn from_records<'a, I>(records: I) -> Result<StoredBlock, WireError>
    where
        I: IntoIterator<Item = StoredRecordRef<'a>>,
    {
        let mut buf = BytesMut::new();
        let mut count: u32 = 0;
        for r in records {
            put_stored(&mut buf, &r)?;
            count = count.checked_add(1).ok_or(WireError::TooLong {
                field: "record count",
                len: usize::MAX,
            })?;
        }
        Ok(StoredBlock {
            count,
            bytes: buf.freeze(),
        })
    }

    /// Number of records.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Whether the block holds no records.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The encoded block.
    pub fn as_bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// Removes and returns the first record (zero-copy), leaving the rest
    /// as a valid block.
    pub fn pop_front(&mut self) -> Option<StoredRecord> {
        let mut it = self.iter();
        let record = it.next()?;
        let consumed = it.pos;
        bytes::Buf::advance(&mut self.bytes, consumed);
        self.count -= 1;
        Some(record)
    }

    /// The records in order.
    pub fn iter(&self) -> StoredIter<'_> {
        StoredIter {
            bytes: &self.bytes,
            pos: 0,
            left: self.count,
        }
    }
}

impl<'a> IntoIterator for &'a StoredBlock {
    type Item = StoredRecord;
    type IntoIter = StoredIter<'a>;
    fn into_iter(self) -> StoredIter<'a> {
        self.iter()
    }
}

/// Iterator over a [`StoredBlock`].
pub struct StoredIter<'a> {
    bytes: &'a Bytes,
    pos: usize,
    left: u32,
}

impl Iterator for StoredIter<'_> {
    type Item = StoredRecord;

    fn next(&mut self) -> Option<StoredRecord> {
        if self.left == 0 {
            return None;
        }
        let mut cur = SliceCursor::new(self.bytes);
        cur.pos = self.pos;
        let offset = cur.u64()?;
        let timestamp = cur.u64()?;
        let delivery_count = cur.u16()?;
        let (ts, te) = cur.str16()?;
        let (hs, he) = cur.blob32()?;
        let (ps, pe) = cur.blob32()?;
        self.pos = cur.pos;
        self.left -= 1;
        Some(StoredRecord {
            offset,
            timestamp,
            delivery_count,
            topic: Str::from_utf8(self.bytes.slice(ts..te)).ok()?,
            headers: self.bytes.slice(hs..he),
            payload: self.bytes.slice(ps..pe),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

fn put_stored(buf: &mut BytesMut, r: &StoredRecordRef<'_>) -> Result<(), WireError> {
    let mark = buf.len();
    buf.put_u64_le(r.offset);
    buf.put_u64_le(r.timestamp);
    buf.put_u16_le(r.delivery_count);
    let result = put_str16(buf, r.topic.as_bytes(), "topic")
        .and_then(|()| put_blob32(buf, r.headers, "record headers"))
        .and_then(|()| put_blob32(buf, r.payload, "record payload"));
    if result.is_err() {
        buf.truncate(mark);
    }
    result
}

/// Appends stored records one at a time to a `Records` frame written
/// straight into a buffer; like [`crate::RecordBlockWriter`] it patches
/// length and count after each record and holds offsets, not a borrow.
#[derive(Clone, Debug)]
pub struct RecordsWriter {
    frame_start: usize,
    count_at: usize,
    count: u32,
}

impl RecordsWriter {
    /// Writes a `Records` frame header with zero records.
    pub fn begin(buf: &mut BytesMut, consumer_id: u32) -> RecordsWriter {
        let frame_start = buf.len();
        buf.put_u32_le(1 + 4 + 4);
        buf.put_u8(kind::RECORDS);
        buf.put_u32_le(consumer_id);
        let count_at = buf.len();
        buf.put_u32_le(0);
        RecordsWriter {
            frame_start,
            count_at,
            count: 0,
        }
    }

    /// Appends one record and patches the frame's count and length.
    ///
    /// # Errors
    /// [`WireError::TooLong`] when a field or the frame overflows its
    /// length field; nothing is appended then.
    pub fn push(
        &mut self,
        buf: &mut BytesMut,
        record: &StoredRecordRef<'_>,
    ) -> Result<(), WireError> {
        let mark = buf.len();
        put_stored(buf, record)?;
        let frame_len = buf.len() - self.frame_start - 4;
        let (Ok(len), Some(count)) = (u32::try_from(frame_len), self.count.checked_add(1)) else {
            buf.truncate(mark);
            return Err(WireError::TooLong {
                field: "records frame",
                len: frame_len,
            });
        };
        self.count = count;
        patch_u32(buf, self.count_at, count);
        patch_u32(buf, self.frame_start, len);
        Ok(())
    }

    /// Records appended so far.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Bytes of the whole frame so far (length prefix included).
    pub fn frame_len(&self, buf: &BytesMut) -> usize {
        buf.len().saturating_sub(self.frame_start)
    }
}

/// Writes a whole `Records` frame.
///
/// # Errors
/// [`WireError::TooLong`] when a field or the frame overflows its length
/// field; the buffer is left as it was.
pub fn encode_records<'a, I>(
    buf: &mut BytesMut,
    consumer_id: u32,
    records: I,
) -> Result<(), WireError>
where
    I: IntoIterator<Item = StoredRecordRef<'a>>,
{
    let mark = buf.len();
    let mut writer = RecordsWriter::begin(buf, consumer_id);
    for r in records {
        if let Err(e) = writer.push(buf, &r) {
            buf.truncate(mark);
            return Err(e);
        }
    }
    Ok(())
}
