//! Encoding a [`Frame`] into a write buffer.
//!
//! The length prefix is written as a placeholder and patched once the body
//! is known; on error the buffer is truncated back so it never ends in half
//! a frame.

use bytes::{BufMut, BytesMut};

use crate::admin::{put_consumer, put_detail, put_spec, put_update};
use crate::codec::{count, patch_u32, put_str16};
use crate::error::WireError;
use crate::frame::{Frame, StreamInfo};

/// Appends `frame`, length prefix included, to `buf`.
///
/// # Errors
/// [`WireError::TooLong`] when a string exceeds 65535 bytes, a list its
/// count field, or the frame 4 GiB; `buf` is left as it was.
pub fn encode(frame: &Frame, buf: &mut BytesMut) -> Result<(), WireError> {
    let start = buf.len();
    let result = encode_inner(frame, buf, start);
    if result.is_err() {
        buf.truncate(start);
    }
    result
}

fn encode_inner(frame: &Frame, buf: &mut BytesMut, start: usize) -> Result<(), WireError> {
    buf.put_u32_le(0);
    buf.put_u8(frame.kind());
    match frame {
        Frame::Hello {
            version,
            client_name,
            credentials,
        } => {
            buf.put_u16_le(*version);
            put_str16(buf, client_name.as_bytes(), "client_name")?;
            if let Some(c) = credentials {
                put_str16(buf, c.username.as_bytes(), "username")?;
                put_str16(buf, c.password.as_bytes(), "password")?;
            }
        }
        Frame::HelloOk {
            version,
            server_name,
            max_message,
            max_frame,
        } => {
            buf.put_u16_le(*version);
            put_str16(buf, server_name.as_bytes(), "server_name")?;
            buf.put_u32_le(*max_message);
            buf.put_u32_le(*max_frame);
        }
        Frame::Ping { nonce } | Frame::Pong { nonce } => buf.put_u64_le(*nonce),
        Frame::Publish {
            request_id,
            flags,
            topic,
            records,
        } => {
            buf.put_u64_le(*request_id);
            buf.put_u8(*flags);
            put_str16(buf, topic.as_bytes(), "topic")?;
            buf.put_u32_le(records.count());
            buf.put_slice(records.as_bytes());
        }
        Frame::PubAck { request_id, count } => {
            buf.put_u64_le(*request_id);
            buf.put_u32_le(*count);
        }
        Frame::Subscribe {
            sub_id,
            flags,
            filter,
        } => {
            buf.put_u32_le(*sub_id);
            buf.put_u8(*flags);
            put_str16(buf, filter.as_bytes(), "filter")?;
        }
        Frame::SubOk { sub_id } | Frame::Unsubscribe { sub_id } => buf.put_u32_le(*sub_id),
        Frame::Deliver {
            sub_id,
            flags,
            batch_timestamp,
            dropped,
            topic,
            records,
        } => {
            buf.put_u32_le(*sub_id);
            buf.put_u8(*flags);
            buf.put_u64_le(*batch_timestamp);
            buf.put_u32_le(*dropped);
            put_str16(buf, topic.as_bytes(), "topic")?;
            buf.put_u32_le(records.count());
            buf.put_slice(records.as_bytes());
        }
        Frame::ConsumerOpen {
            request_id,
            stream,
            name,
            filter,
            start,
            ack_timeout_ms,
            max_inflight,
            push_credit,
        } => {
            buf.put_u64_le(*request_id);
            put_str16(buf, stream.as_bytes(), "stream")?;
            put_str16(buf, name.as_bytes(), "name")?;
            put_str16(buf, filter.as_bytes(), "filter")?;
            let (start, value) = start.to_wire();
            buf.put_u8(start);
            buf.put_u64_le(value);
            buf.put_u32_le(*ack_timeout_ms);
            buf.put_u32_le(*max_inflight);
            buf.put_u32_le(*push_credit);
        }
        Frame::ConsumerOk {
            request_id,
            consumer_id,
            next_offset,
        } => {
            buf.put_u64_le(*request_id);
            buf.put_u32_le(*consumer_id);
            buf.put_u64_le(*next_offset);
        }
        Frame::Fetch {
            consumer_id,
            max_records,
            max_wait_ms,
        } => {
            buf.put_u32_le(*consumer_id);
            buf.put_u32_le(*max_records);
            buf.put_u32_le(*max_wait_ms);
        }
        Frame::Records {
            consumer_id,
            records,
        } => {
            buf.put_u32_le(*consumer_id);
            buf.put_u32_le(records.count());
            buf.put_slice(records.as_bytes());
        }
        Frame::Credit {
            consumer_id,
            credit,
        } => {
            buf.put_u32_le(*consumer_id);
            buf.put_u32_le(*credit);
        }
        Frame::Ack {
            consumer_id,
            offsets,
        } => {
            buf.put_u32_le(*consumer_id);
            buf.put_u32_le(count(offsets.len(), "ack offsets")?);
            for offset in offsets {
                buf.put_u64_le(*offset);
            }
        }
        Frame::ConsumerClose { consumer_id } => buf.put_u32_le(*consumer_id),
        Frame::StreamList { request_id } => buf.put_u64_le(*request_id),
        Frame::StreamListOk {
            request_id,
            streams,
        } => {
            buf.put_u64_le(*request_id);
            buf.put_u16_le(count(streams.len(), "streams")?);
            for info in streams {
                put_stream_info(buf, info)?;
            }
        }
        Frame::StreamCreate { request_id, spec } => {
            buf.put_u64_le(*request_id);
            put_spec(buf, spec)?;
        }
        Frame::StreamUpdate {
            request_id,
            name,
            subjects,
            retention_bytes,
            retention_age_ms,
        } => {
            buf.put_u64_le(*request_id);
            put_str16(buf, name.as_bytes(), "stream name")?;
            put_update(
                buf,
                subjects.as_deref(),
                *retention_bytes,
                *retention_age_ms,
            )?;
        }
        Frame::StreamPurge { request_id, name }
        | Frame::StreamDelete { request_id, name }
        | Frame::StreamGet { request_id, name } => {
            buf.put_u64_le(*request_id);
            put_str16(buf, name.as_bytes(), "stream name")?;
        }
        Frame::StreamOk { request_id, stream } => {
            buf.put_u64_le(*request_id);
            put_detail(buf, stream)?;
        }
        Frame::ConsumerList {
            request_id,
            stream,
            name,
        }
        | Frame::ConsumerDelete {
            request_id,
            stream,
            name,
        } => {
            buf.put_u64_le(*request_id);
            put_str16(buf, stream.as_bytes(), "stream name")?;
            put_str16(buf, name.as_bytes(), "consumer name")?;
        }
        Frame::ConsumerListOk {
            request_id,
            consumers,
        } => {
            buf.put_u64_le(*request_id);
            buf.put_u32_le(count(consumers.len(), "consumers")?);
            for c in consumers {
                put_consumer(buf, c)?;
            }
        }
        Frame::Done { request_id } | Frame::Withdraw { request_id } => buf.put_u64_le(*request_id),
        Frame::SubscribeProfile {
            sub_id,
            flags,
            filter,
            interest,
        } => {
            buf.put_u32_le(*sub_id);
            buf.put_u8(*flags);
            put_str16(buf, filter.as_bytes(), "filter")?;
            put_str16(buf, interest.as_bytes(), "interest")?;
        }
        Frame::Announce {
            request_id,
            topic,
            profile,
        } => {
            buf.put_u64_le(*request_id);
            put_str16(buf, topic.as_bytes(), "topic")?;
            put_str16(buf, profile.as_bytes(), "profile")?;
        }
        Frame::Query {
            request_id,
            stream,
            interest,
            since,
            until,
            latest_by,
            limit,
            after,
            flags,
        } => {
            buf.put_u64_le(*request_id);
            put_str16(buf, stream.as_bytes(), "stream")?;
            put_str16(buf, interest.as_bytes(), "interest")?;
            buf.put_u64_le(*since);
            buf.put_u64_le(*until);
            put_str16(buf, latest_by.as_bytes(), "latest_by")?;
            buf.put_u32_le(*limit);
            buf.put_u64_le(*after);
            buf.put_u8(*flags);
        }
        Frame::Delete {
            request_id,
            stream,
            interest,
            since,
            until,
        } => {
            buf.put_u64_le(*request_id);
            put_str16(buf, stream.as_bytes(), "stream")?;
            put_str16(buf, interest.as_bytes(), "interest")?;
            buf.put_u64_le(*since);
            buf.put_u64_le(*until);
        }
        Frame::Deleted { request_id, count } => {
            buf.put_u64_le(*request_id);
            buf.put_u64_le(*count);
        }
        Frame::QueryOk {
            request_id,
            next,
            records,
        } => {
            buf.put_u64_le(*request_id);
            buf.put_u64_le(*next);
            buf.put_u32_le(records.count());
            buf.put_slice(records.as_bytes());
        }
        Frame::Notice {
            request_id,
            interested,
        } => {
            buf.put_u64_le(*request_id);
            buf.put_u8(u8::from(*interested));
        }
        Frame::Error {
            request_id,
            code,
            message,
        } => {
            buf.put_u64_le(*request_id);
            buf.put_u16_le(code.as_u16());
            put_str16(buf, message.as_bytes(), "message")?;
        }
    }
    let len: u32 = count(buf.len() - start - 4, "frame")?;
    patch_u32(buf, start, len);
    Ok(())
}

fn put_stream_info(buf: &mut BytesMut, info: &StreamInfo) -> Result<(), WireError> {
    put_str16(buf, info.name.as_bytes(), "stream name")?;
    buf.put_u8(info.storage.as_u8());
    buf.put_u16_le(count(info.subjects.len(), "subjects")?);
    for subject in &info.subjects {
        put_str16(buf, subject.as_bytes(), "subject")?;
    }
    buf.put_u64_le(info.first_offset);
    buf.put_u64_le(info.next_offset);
    buf.put_u64_le(info.records);
    buf.put_u64_le(info.bytes);
    buf.put_u32_le(info.segments);
    buf.put_u32_le(info.consumers);
    Ok(())
}
