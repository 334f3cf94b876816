//! The bodies of the management frames: a stream to create ([`StreamSpec`]), a stream as it
//! is ([`StreamDetail`]) and a consumer as it is ([`ConsumerDetail`]), with their codec.
//!
//! In a [`StreamSpec`] and a `StreamUpdate`, [`NODE_DEFAULT`] takes the node's default for a
//! `u64` setting, and a retention of 0 means no limit.

use bytes::{BufMut, BytesMut};

use crate::codec::{count, put_str16, Reader};
use crate::error::WireError;
use crate::frame::Storage;
use crate::text::Str;

/// A `u64` setting's value meaning "the node's default".
pub const NODE_DEFAULT: u64 = u64::MAX;

/// The storage byte of a [`StreamSpec`] that takes the node's default.
const STORAGE_DEFAULT: u8 = 0xFF;

/// A stream to create.
///
/// Wire: `name: str16, storage: u8 (0 memory, 1 mmap, 2 fsync, 255 the node's default),
/// subjects: u16 count x str16, retention_bytes: u64, retention_age_ms: u64,
/// segment_bytes: u64`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamSpec {
    /// Its name.
    pub name: Str,
    /// Its storage; `None` takes the node's default.
    pub storage: Option<Storage>,
    /// The topic filters it captures.
    pub subjects: Vec<Str>,
    /// Retention by size ([`NODE_DEFAULT`]: the node's; 0: no limit).
    pub retention_bytes: u64,
    /// Retention by age in milliseconds ([`NODE_DEFAULT`]: the node's; 0: no limit).
    pub retention_age_ms: u64,
    /// Size of a segment ([`NODE_DEFAULT`]: the node's).
    pub segment_bytes: u64,
}

/// A stream as it is.
///
/// Wire: `name: str16, storage: u8, subjects: u16 count x str16, retention_bytes: u64,
/// retention_age_ms: u64, segment_bytes: u64, flags: u8, first_offset: u64,
/// next_offset: u64, records: u64, bytes: u64, segments: u32, consumers: u32,
/// first_timestamp: u64, last_timestamp: u64`. Retention 0 means no limit; flags bit 0: the
/// retention by size is the node's default, bit 1: the retention by age is; timestamps are
/// microseconds since the UNIX epoch, 0 when the stream holds no records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamDetail {
    /// Its name.
    pub name: Str,
    /// Its storage.
    pub storage: Storage,
    /// The topic filters it captures.
    pub subjects: Vec<Str>,
    /// Retention by size in force (0: none).
    pub retention_bytes: u64,
    /// Retention by age in force, milliseconds (0: none).
    pub retention_age_ms: u64,
    /// Size of a new segment.
    pub segment_bytes: u64,
    /// The retention by size is the node's default.
    pub retention_bytes_default: bool,
    /// The retention by age is the node's default.
    pub retention_age_default: bool,
    /// Oldest retained offset.
    pub first_offset: u64,
    /// Offset the next record gets.
    pub next_offset: u64,
    /// Records retained.
    pub records: u64,
    /// Bytes retained.
    pub bytes: u64,
    /// Segments.
    pub segments: u32,
    /// Consumers open on it.
    pub consumers: u32,
    /// Time of the oldest record (0: none).
    pub first_timestamp: u64,
    /// Time of the newest record (0: none).
    pub last_timestamp: u64,
}

/// A consumer of a stream as it is: a durable one (open or not) or an open ephemeral one.
///
/// Wire: `stream: str16, name: str16 (empty: ephemeral), flags: u8 (bit 0: open),
/// filter: str16, ack_floor: u64, cursor: u64 (u64::MAX: not open), pending_acks: u64,
/// lag: u64, delivered: u64, redelivered: u64, opened_at: u64 (microseconds since the UNIX
/// epoch; 0: not open)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerDetail {
    /// The stream it reads.
    pub stream: Str,
    /// Its durable name; empty for an ephemeral consumer.
    pub name: Str,
    /// A client has it open now.
    pub open: bool,
    /// Its topic filter (empty: none, or not open).
    pub filter: Str,
    /// Every record below this offset was acknowledged.
    pub ack_floor: u64,
    /// The next offset it reads, when open.
    pub cursor: Option<u64>,
    /// Records handed out and not acknowledged, when open.
    pub pending_acks: u64,
    /// Records of the stream at or past its floor.
    pub lag: u64,
    /// Records handed out for the first time since it was opened.
    pub delivered: u64,
    /// Records handed out again, since the node started.
    pub redelivered: u64,
    /// When it was opened, microseconds since the UNIX epoch (0: not open).
    pub opened_at: u64,
}

fn storage_byte(s: Option<Storage>) -> u8 {
    s.map_or(STORAGE_DEFAULT, Storage::as_u8)
}

fn put_subjects(buf: &mut BytesMut, subjects: &[Str]) -> Result<(), WireError> {
    buf.put_u16_le(count(subjects.len(), "subjects")?);
    for s in subjects {
        put_str16(buf, s.as_bytes(), "subject")?;
    }
    Ok(())
}

pub(crate) fn read_subjects(r: &mut Reader) -> Result<Vec<Str>, WireError> {
    let n = r.u16("subject count")?;
    // Grows only as subjects actually parse: no allocation from the count.
    let mut subjects = Vec::new();
    for _ in 0..n {
        subjects.push(r.str16("subject")?);
    }
    Ok(subjects)
}

pub(crate) fn put_spec(buf: &mut BytesMut, s: &StreamSpec) -> Result<(), WireError> {
    put_str16(buf, s.name.as_bytes(), "stream name")?;
    buf.put_u8(storage_byte(s.storage));
    put_subjects(buf, &s.subjects)?;
    buf.put_u64_le(s.retention_bytes);
    buf.put_u64_le(s.retention_age_ms);
    buf.put_u64_le(s.segment_bytes);
    Ok(())
}

pub(crate) fn read_spec(r: &mut Reader) -> Result<StreamSpec, WireError> {
    let name = r.str16("stream name")?;
    let storage = match r.u8("storage")? {
        STORAGE_DEFAULT => None,
        b => Some(Storage::from_u8(b).ok_or(r.malformed("unknown storage"))?),
    };
    Ok(StreamSpec {
        name,
        storage,
        subjects: read_subjects(r)?,
        retention_bytes: r.u64("retention_bytes")?,
        retention_age_ms: r.u64("retention_age_ms")?,
        segment_bytes: r.u64("segment_bytes")?,
    })
}

/// Bits of a `StreamUpdate`'s `fields` byte.
pub(crate) mod fields {
    pub const SUBJECTS: u8 = 1;
    pub const RETENTION_BYTES: u8 = 2;
    pub const RETENTION_AGE: u8 = 4;
}

pub(crate) fn put_update(
    buf: &mut BytesMut,
    subjects: Option<&[Str]>,
    retention_bytes: Option<u64>,
    retention_age_ms: Option<u64>,
) -> Result<(), WireError> {
    let mut f = 0;
    if subjects.is_some() {
        f |= fields::SUBJECTS;
    }
    if retention_bytes.is_some() {
        f |= fields::RETENTION_BYTES;
    }
    if retention_age_ms.is_some() {
        f |= fields::RETENTION_AGE;
    }
    buf.put_u8(f);
    put_subjects(buf, subjects.unwrap_or_default())?;
    buf.put_u64_le(retention_bytes.unwrap_or(0));
    buf.put_u64_le(retention_age_ms.unwrap_or(0));
    Ok(())
}

/// The changes of a `StreamUpdate`: subjects, retention bytes, retention age.
pub(crate) type Update = (Option<Vec<Str>>, Option<u64>, Option<u64>);

pub(crate) fn read_update(r: &mut Reader) -> Result<Update, WireError> {
    let f = r.u8("fields")?;
    let subjects = read_subjects(r)?;
    if f & fields::SUBJECTS == 0 && !subjects.is_empty() {
        return Err(r.malformed("subjects given without their field bit"));
    }
    let bytes = r.u64("retention_bytes")?;
    let age = r.u64("retention_age_ms")?;
    Ok((
        (f & fields::SUBJECTS != 0).then_some(subjects),
        (f & fields::RETENTION_BYTES != 0).then_some(bytes),
        (f & fields::RETENTION_AGE != 0).then_some(age),
    ))
}

pub(crate) fn put_detail(buf: &mut BytesMut, d: &StreamDetail) -> Result<(), WireError> {
    put_str16(buf, d.name.as_bytes(), "stream name")?;
    buf.put_u8(d.storage.as_u8());
    put_subjects(buf, &d.subjects)?;
    buf.put_u64_le(d.retention_bytes);
    buf.put_u64_le(d.retention_age_ms);
    buf.put_u64_le(d.segment_bytes);
    buf.put_u8(u8::from(d.retention_bytes_default) | u8::from(d.retention_age_default) << 1);
    buf.put_u64_le(d.first_offset);
    buf.put_u64_le(d.next_offset);
    buf.put_u64_le(d.records);
    buf.put_u64_le(d.bytes);
    buf.put_u32_le(d.segments);
    buf.put_u32_le(d.consumers);
    buf.put_u64_le(d.first_timestamp);
    buf.put_u64_le(d.last_timestamp);
    Ok(())
}

pub(crate) fn read_detail(r: &mut Reader) -> Result<StreamDetail, WireError> {
    let name = r.str16("stream name")?;
    let storage = Storage::from_u8(r.u8("storage")?).ok_or(r.malformed("unknown storage"))?;
    let subjects = read_subjects(r)?;
    let retention_bytes = r.u64("retention_bytes")?;
    let retention_age_ms = r.u64("retention_age_ms")?;
    let segment_bytes = r.u64("segment_bytes")?;
    let flags = r.u8("flags")?;
    Ok(StreamDetail {
        name,
        storage,
        subjects,
        retention_bytes,
        retention_age_ms,
        segment_bytes,
        retention_bytes_default: flags & 1 != 0,
        retention_age_default: flags & 2 != 0,
        first_offset: r.u64("first_offset")?,
        next_offset: r.u64("next_offset")?,
        records: r.u64("records")?,
        bytes: r.u64("bytes")?,
        segments: r.u32("segments")?,
        consumers: r.u32("consumers")?,
        first_timestamp: r.u64("first_timestamp")?,
        last_timestamp: r.u64("last_timestamp")?,
    })
}

pub(crate) fn put_consumer(buf: &mut BytesMut, c: &ConsumerDetail) -> Result<(), WireError> {
    put_str16(buf, c.stream.as_bytes(), "stream name")?;
    put_str16(buf, c.name.as_bytes(), "consumer name")?;
    buf.put_u8(u8::from(c.open));
    put_str16(buf, c.filter.as_bytes(), "filter")?;
    buf.put_u64_le(c.ack_floor);
    buf.put_u64_le(c.cursor.unwrap_or(u64::MAX));
    buf.put_u64_le(c.pending_acks);
    buf.put_u64_le(c.lag);
    buf.put_u64_le(c.delivered);
    buf.put_u64_le(c.redelivered);
    buf.put_u64_le(c.opened_at);
    Ok(())
}

pub(crate) fn read_consumer(r: &mut Reader) -> Result<ConsumerDetail, WireError> {
    let stream = r.str16("stream name")?;
    let name = r.str16("consumer name")?;
    let open = r.u8("flags")? & 1 != 0;
    Ok(ConsumerDetail {
        stream,
        name,
        open,
        filter: r.str16("filter")?,
        ack_floor: r.u64("ack_floor")?,
        cursor: Some(r.u64("cursor")?).filter(|&c| c != u64::MAX),
        pending_acks: r.u64("pending_acks")?,
        lag: r.u64("lag")?,
        delivered: r.u64("delivered")?,
        redelivered: r.u64("redelivered")?,
        opened_at: r.u64("opened_at")?,
    })
}
