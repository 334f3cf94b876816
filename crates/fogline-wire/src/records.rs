//! Record blocks of `Publish` and `Deliver` frames.
//!
//! Layout: `count` x `{timestamp: u64, headers: blob32, payload: blob32}`,
//! records back to back, the block running to the end of the frame.
//! `timestamp` is microseconds since the UNIX epoch; 0 means "the server
//! assigns" (a `Deliver` carries the server's `batch_timestamp` for those).
//!
//! The server forwards a publisher's block verbatim to subscribers, so a
//! decoded block is one `Bytes` slice plus a count that was validated
//! against it; iteration yields zero-copy slices.

use std::ops::Range;

use bytes::{BufMut, Bytes, BytesMut};

use crate::codec::{patch_u32, put_blob32, put_str16, SliceCursor};
use crate::error::WireError;
use crate::kind;

/// Smallest encoded record: timestamp + two empty blobs.
pub(crate) const MIN_RECORD: usize = 16;

/// One record of a [`RecordBlock`], as zero-copy slices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Microseconds since the UNIX epoch; 0 = assigned by the server.
    pub timestamp: u64,
    /// The header block (see [`crate::Headers`]); may be empty.
    pub headers: Bytes,
    /// The payload.
    pub payload: Bytes,
}

/// One record of a [`RecordBlock`], borrowed: no reference count is taken (a `Bytes`
/// slice costs an atomic increment and decrement, for a reader that only copies it out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordRef<'a> {
    /// Microseconds since the UNIX epoch; 0 = assigned by the server.
    pub timestamp: u64,
    /// The header block (see [`crate::Headers`]); may be empty.
    pub headers: &'a [u8],
    /// The payload.
    pub payload: &'a [u8],
}

/// A validated block of `count` records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordBlock {
    count: u32,
    bytes: Bytes,
}

impl RecordBlock {
    /// Validates that `bytes` holds exactly `count` records.
    ///
    /// # Errors
    /// [`WireError::Malformed`] (kind 0) when it does not.
    pub fn parse(count: u32, bytes: Bytes) -> Result<RecordBlock, WireError> {
        RecordBlock::parse_in(0, count, bytes)
    }

    pub(crate) fn parse_in(kind: u8, count: u32, bytes: Bytes) -> Result<RecordBlock, WireError> {
        let bad = |reason| WireError::Malformed { kind, reason };
        // Cheap bound first: a huge count over a short block fails at once.
        if (count as usize).saturating_mul(MIN_RECORD) > bytes.len() {
            return Err(bad("record count exceeds block"));
        }
        let mut cur = SliceCursor::new(&bytes);
        for _ in 0..count {
            cur.skip(8).ok_or(bad("record truncated"))?;
            let (hs, he) = cur.blob32().ok_or(bad("record headers truncated"))?;
            // Headers are stored and handed to every subscriber as they came: a block that
            // does not follow its layout (a count it does not hold) is refused here.
            if he > hs {
                crate::headers::validate(&bytes[hs..he]).map_err(bad)?;
            }
            cur.blob32().ok_or(bad("record payload truncated"))?;
        }
        if cur.pos != bytes.len() {
            return Err(bad("trailing bytes after records"));
        }
        Ok(RecordBlock { count, bytes })
    }

    /// Number of records.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Whether the block holds no records.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Header and payload bytes of all its records (the block less each record's
    /// timestamp and two lengths).
    pub fn content_len(&self) -> usize {
        self.bytes.len() - self.count as usize * MIN_RECORD
    }

    /// The encoded block, exactly as it travels.
    pub fn as_bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// Gives up the block for its bytes.
    pub fn into_bytes(self) -> Bytes {
        self.bytes
    }

    /// Removes and returns the first record (zero-copy), leaving the rest
    /// as a valid block; lets a receiver walk a block without borrowing it.
    pub fn pop_front(&mut self) -> Option<Record> {
        let mut it = self.iter();
        let record = it.next()?;
        let consumed = it.spans.pos;
        bytes::Buf::advance(&mut self.bytes, consumed);
        self.count -= 1;
        Some(record)
    }

    /// The records in order.
    pub fn iter(&self) -> RecordIter<'_> {
        RecordIter {
            bytes: &self.bytes,
            spans: self.iter_ref(),
        }
    }

    /// The records in order, borrowed.
    pub fn iter_ref(&self) -> RecordRefIter<'_> {
        RecordRefIter {
            bytes: &self.bytes,
            pos: 0,
            left: self.count,
        }
    }

    /// A block of one record, in one allocation of the exact size.
    ///
    /// # Errors
    /// [`WireError::TooLong`] if a field overflows its length field.
    pub fn single(
        timestamp: u64,
        headers: &[u8],
        payload: &[u8],
    ) -> Result<RecordBlock, WireError> {
        // 8-byte timestamp and two 4-byte lengths.
        let mut buf = BytesMut::with_capacity(16 + headers.len() + payload.len());
        put_record(&mut buf, timestamp, headers, payload)?;
        Ok(RecordBlock {
            count: 1,
            bytes: buf.freeze(),
        })
    }

    /// A block built from `(timestamp, headers, payload)` triples.
    ///
    /// # Errors
    /// [`WireError::TooLong`] if a field or the count overflows its length field.
    pub fn from_records<'a, I>(records: I) -> Result<RecordBlock, WireError>
    where
        I: IntoIterator<Item = (u64, &'a [u8], &'a [u8])>,
    {
        let mut buf = BytesMut::new();
        let mut count: u32 = 0;
        for (timestamp, headers, payload) in records {
            put_record(&mut buf, timestamp, headers, payload)?;
            count = count.checked_add(1).ok_or(WireError::TooLong {
                field: "record count",
                len: usize::MAX,
            })?;
        }
        Ok(RecordBlock {
            count,
            bytes: buf.freeze(),
        })
    }
}

impl<'a> IntoIterator for &'a RecordBlock {
    type Item = Record;
    type IntoIter = RecordIter<'a>;
    fn into_iter(self) -> RecordIter<'a> {
        self.iter()
    }
}

/// Iterator over the records of a [`RecordBlock`].
pub struct RecordIter<'a> {
    bytes: &'a Bytes,
    spans: RecordRefIter<'a>,
}

impl Iterator for RecordIter<'_> {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        let (timestamp, headers, payload) = self.spans.next_spans()?;
        Some(Record {
            timestamp,
            headers: self.bytes.slice(headers),
            payload: self.bytes.slice(payload),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.spans.size_hint()
    }
}

/// Iterator over the records of a [`RecordBlock`], borrowed.
pub struct RecordRefIter<'a> {
    bytes: &'a [u8],
    pos: usize,
    left: u32,
}

impl RecordRefIter<'_> {
    /// The next record's timestamp and where its headers and payload lie in the block.
    fn next_spans(&mut self) -> Option<(u64, Range<usize>, Range<usize>)> {
        if self.left == 0 {
            return None;
        }
        let mut cur = SliceCursor::new(self.bytes);
        cur.pos = self.pos;
        // Validated at parse time; a failure here just ends the iteration.
        let timestamp = cur.u64()?;
        let (hs, he) = cur.blob32()?;
        let (ps, pe) = cur.blob32()?;
        self.pos = cur.pos;
        self.left -= 1;
        Some((timestamp, hs..he, ps..pe))
    }
}

impl<'a> Iterator for RecordRefIter<'a> {
    type Item = RecordRef<'a>;

    fn next(&mut self) -> Option<RecordRef<'a>> {
        let (timestamp, headers, payload) = self.next_spans()?;
        let bytes: &'a [u8] = self.bytes;
        Some(RecordRef {
            timestamp,
            headers: &bytes[headers],
            payload: &bytes[payload],
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

pub(crate) fn put_record(
    buf: &mut BytesMut,
    timestamp: u64,
    headers: &[u8],
    payload: &[u8],
) -> Result<(), WireError> {
    let mark = buf.len();
    buf.put_u64_le(timestamp);
    let result = put_blob32(buf, headers, "record headers")
        .and_then(|()| put_blob32(buf, payload, "record payload"));
    if result.is_err() {
        buf.truncate(mark);
    }
    result
}

/// Appends records one at a time to a `Publish` frame written straight into
/// a buffer, patching the frame's length and count after each record so the
/// buffer always ends in a complete, valid frame.
///
/// The writer holds offsets, not a borrow: it stays valid while nothing
/// before its frame is removed from the buffer (after `split`/`clear`, start
/// a new one).
#[derive(Clone, Debug)]
pub struct RecordBlockWriter {
    frame_start: usize,
    count_at: usize,
    count: u32,
}

/// Writes a `Publish` frame header with zero records and returns the writer
/// that appends its records.
///
/// # Errors
/// [`WireError::TooLong`] when the topic exceeds 65535 bytes (nothing is written).
pub fn encode_publish_header(
    buf: &mut BytesMut,
    request_id: u64,
    flags: u8,
    topic: &str,
) -> Result<RecordBlockWriter, WireError> {
    let frame_start = buf.len();
    buf.put_u32_le(0);
    buf.put_u8(kind::PUBLISH);
    buf.put_u64_le(request_id);
    buf.put_u8(flags);
    if let Err(e) = put_str16(buf, topic.as_bytes(), "topic") {
        buf.truncate(frame_start);
        return Err(e);
    }
    let count_at = buf.len();
    buf.put_u32_le(0);
    let len = (buf.len() - frame_start - 4) as u32;
    patch_u32(buf, frame_start, len);
    Ok(RecordBlockWriter {
        frame_start,
        count_at,
        count: 0,
    })
}

impl RecordBlockWriter {
    /// Appends one record and patches the frame's count and length.
    ///
    /// # Errors
    /// [`WireError::TooLong`] when the record would overflow the frame's
    /// length or count fields; nothing is appended then.
    #[inline]
    pub fn push(
        &mut self,
        buf: &mut BytesMut,
        timestamp: u64,
        headers: &[u8],
        payload: &[u8],
    ) -> Result<(), WireError> {
        let record_len = MIN_RECORD + headers.len() + payload.len();
        let frame_len = buf.len() - self.frame_start - 4 + record_len;
        let (Ok(frame_len), Some(count)) = (u32::try_from(frame_len), self.count.checked_add(1))
        else {
            return Err(WireError::TooLong {
                field: "publish frame",
                len: frame_len,
            });
        };
        buf.reserve(record_len);
        buf.put_u64_le(timestamp);
        buf.put_u32_le(headers.len() as u32);
        buf.put_slice(headers);
        buf.put_u32_le(payload.len() as u32);
        buf.put_slice(payload);
        self.count = count;
        patch_u32(buf, self.count_at, count);
        patch_u32(buf, self.frame_start, frame_len);
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

/// Writes a `Deliver` frame whose record block is copied verbatim from a
/// publisher's `Publish` (see [`RecordBlock::as_bytes`]).
///
/// # Errors
/// [`WireError::TooLong`] when the topic exceeds 65535 bytes or the frame
/// 4 GiB (nothing is written).
#[allow(clippy::too_many_arguments)] // mirrors the frame's fields one to one
pub fn encode_deliver(
    buf: &mut BytesMut,
    sub_id: u32,
    flags: u8,
    batch_timestamp: u64,
    dropped: u32,
    topic: &str,
    count: u32,
    block: &[u8],
) -> Result<(), WireError> {
    buf.reserve(4 + 24 + topic.len() + block.len());
    encode_deliver_header(
        buf,
        sub_id,
        flags,
        batch_timestamp,
        dropped,
        topic,
        count,
        block.len(),
    )?;
    buf.put_slice(block);
    Ok(())
}

/// Writes a `Deliver` frame up to its record block, which the caller sends next, `block_len`
/// bytes (a large block can then go to the socket from where it is, uncopied).
///
/// # Errors
/// As [`encode_deliver`] (nothing is written).
#[allow(clippy::too_many_arguments)] // mirrors the frame's fields one to one
pub fn encode_deliver_header(
    buf: &mut BytesMut,
    sub_id: u32,
    flags: u8,
    batch_timestamp: u64,
    dropped: u32,
    topic: &str,
    count: u32,
    block_len: usize,
) -> Result<(), WireError> {
    let frame_start = buf.len();
    let body = 1 + 4 + 1 + 8 + 4 + 2 + topic.len() + 4 + block_len;
    let len = u32::try_from(body).map_err(|_| WireError::TooLong {
        field: "deliver frame",
        len: body,
    })?;
    if u16::try_from(topic.len()).is_err() {
        return Err(WireError::TooLong {
            field: "topic",
            len: topic.len(),
        });
    }
    buf.reserve(4 + body - block_len);
    buf.put_u32_le(len);
    buf.put_u8(kind::DELIVER);
    buf.put_u32_le(sub_id);
    buf.put_u8(flags);
    buf.put_u64_le(batch_timestamp);
    buf.put_u32_le(dropped);
    buf.put_u16_le(topic.len() as u16);
    buf.put_slice(topic.as_bytes());
    buf.put_u32_le(count);
    debug_assert_eq!(buf.len() - frame_start, 4 + body - block_len);
    Ok(())
}
