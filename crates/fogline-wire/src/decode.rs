//! Decoding: a streaming decoder over a read buffer and a whole-frame
//! decoder.
//!
//! Invariants: never panics on any input; never allocates in proportion to
//! a length or count field before the bytes it announces are present; the
//! frame's byte fields are zero-copy slices of the input.

use bytes::{Buf, Bytes, BytesMut};

use crate::admin::{read_consumer, read_detail, read_spec, read_update};
use crate::codec::Reader;
use crate::error::{ErrorCode, WireError};
use crate::frame::{kind, Credentials, Frame, StartPosition, Storage, StreamInfo};
use crate::records::RecordBlock;
use crate::stored::StoredBlock;

/// Decodes the next frame from the front of `buf`.
///
/// Returns `Ok(None)` when `buf` does not yet hold a whole frame (nothing is
/// consumed). On success the frame's bytes are removed from `buf`.
///
/// # Errors
/// - [`WireError::FrameTooLarge`] as soon as the length prefix exceeds
///   `max_frame`, before the frame is buffered; nothing is consumed and the
///   stream cannot be resynchronised.
/// - [`WireError::UnknownFrame`] / [`WireError::Malformed`]: the whole frame
///   was consumed, so the caller may answer with an `Error` and go on.
pub fn decode(buf: &mut BytesMut, max_frame: u32) -> Result<Option<Frame>, WireError> {
    let Some(prefix) = buf.get(..4) else {
        return Ok(None);
    };
    let len = u32::from_le_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    if len > max_frame {
        return Err(WireError::FrameTooLarge {
            len,
            max: max_frame,
        });
    }
    let total = 4 + len as usize;
    if buf.len() < total {
        return Ok(None);
    }
    buf.advance(4);
    let frame = buf.split_to(len as usize).freeze();
    decode_frame(frame).map(Some)
}

/// Room [`reserve_read`] makes ahead of the bytes received on the strength of an announced
/// length alone: enough for a 1 MiB message's frame in one read, and no more, so a peer that
/// announces a huge frame and stalls makes the reader reserve at most this much.
pub const RESERVE_AHEAD: usize = 2 << 20;

/// Makes room in a read buffer for the rest of a partly read frame, so that one read can
/// take it whole (a large frame read a chunk at a time costs a system call and a buffer
/// regrowth per chunk), or else for a fresh `chunk`. Call it after [`decode`] returned
/// `Ok(None)`: that has checked the announced length against the frame limit.
///
/// The room made is at most [`RESERVE_AHEAD`] or the bytes already received, whichever is
/// larger: a frame bigger than that grows the buffer geometrically as its bytes arrive.
pub fn reserve_read(buf: &mut BytesMut, chunk: usize) {
    let want = match buf.get(..4) {
        Some(p) => (4 + u32::from_le_bytes([p[0], p[1], p[2], p[3]]) as usize).max(chunk),
        None => chunk,
    };
    let want = want.min(buf.len().saturating_mul(2).max(RESERVE_AHEAD));
    if buf.capacity() - buf.len() < want.min(chunk) || buf.capacity() < want {
        buf.reserve(want.saturating_sub(buf.len()).max(chunk / 4));
    }
}

/// Decodes one whole frame given without its length prefix (kind + body).
///
/// # Errors
/// [`WireError::UnknownFrame`] or [`WireError::Malformed`].
pub fn decode_frame(mut frame: Bytes) -> Result<Frame, WireError> {
    if frame.is_empty() {
        return Err(WireError::Malformed {
            kind: 0,
            reason: "empty frame",
        });
    }
    let k = frame.get_u8();
    let mut r = Reader::new(k, frame);
    let f = match k {
        kind::HELLO => Frame::Hello {
            version: r.u16("version")?,
            client_name: r.str16("client_name")?,
            credentials: if r.remaining() > 0 {
                Some(Credentials {
                    username: r.str16("username")?,
                    password: r.str16("password")?,
                })
            } else {
                None
            },
        },
        kind::HELLO_OK => Frame::HelloOk {
            version: r.u16("version")?,
            server_name: r.str16("server_name")?,
            max_message: r.u32("max_message")?,
            max_frame: r.u32("max_frame")?,
        },
        kind::PING => Frame::Ping {
            nonce: r.u64("nonce")?,
        },
        kind::PONG => Frame::Pong {
            nonce: r.u64("nonce")?,
        },
        kind::PUBLISH => {
            let request_id = r.u64("request_id")?;
            let flags = r.u8("flags")?;
            let topic = r.str16("topic")?;
            let count = r.u32("count")?;
            let records = RecordBlock::parse_in(k, count, r.rest())?;
            Frame::Publish {
                request_id,
                flags,
                topic,
                records,
            }
        }
        kind::PUB_ACK => Frame::PubAck {
            request_id: r.u64("request_id")?,
            count: r.u32("count")?,
        },
        kind::SUBSCRIBE => Frame::Subscribe {
            sub_id: r.u32("sub_id")?,
            flags: r.u8("flags")?,
            filter: r.str16("filter")?,
        },
        kind::SUBSCRIBE_PROFILE => Frame::SubscribeProfile {
            sub_id: r.u32("sub_id")?,
            flags: r.u8("flags")?,
            filter: r.str16("filter")?,
            interest: r.str16("interest")?,
        },
        kind::ANNOUNCE => Frame::Announce {
            request_id: r.u64("request_id")?,
            topic: r.str16("topic")?,
            profile: r.str16("profile")?,
        },
        kind::NOTICE => Frame::Notice {
            request_id: r.u64("request_id")?,
            interested: match r.u8("interested")? {
                0 => false,
                1 => true,
                _ => {
                    return Err(WireError::Malformed {
                        kind: k,
                        reason: "interested is neither 0 nor 1",
                    })
                }
            },
        },
        kind::QUERY => Frame::Query {
            request_id: r.u64("request_id")?,
            stream: r.str16("stream")?,
            interest: r.str16("interest")?,
            since: r.u64("since")?,
            until: r.u64("until")?,
            latest_by: r.str16("latest_by")?,
            limit: r.u32("limit")?,
            after: r.u64("after")?,
            flags: r.u8("flags")?,
        },
        kind::QUERY_OK => {
            let request_id = r.u64("request_id")?;
            let next = r.u64("next")?;
            let count = r.u32("count")?;
            let records = StoredBlock::parse_in(k, count, r.rest())?;
            Frame::QueryOk {
                request_id,
                next,
                records,
            }
        }
        kind::DELETE => Frame::Delete {
            request_id: r.u64("request_id")?,
            stream: r.str16("stream")?,
            interest: r.str16("interest")?,
            since: r.u64("since")?,
            until: r.u64("until")?,
        },
        kind::DELETED => Frame::Deleted {
            request_id: r.u64("request_id")?,
            count: r.u64("count")?,
        },
        kind::WITHDRAW => Frame::Withdraw {
            request_id: r.u64("request_id")?,
        },
        kind::SUB_OK => Frame::SubOk {
            sub_id: r.u32("sub_id")?,
        },
        kind::UNSUBSCRIBE => Frame::Unsubscribe {
            sub_id: r.u32("sub_id")?,
        },
        kind::DELIVER => {
            let sub_id = r.u32("sub_id")?;
            let flags = r.u8("flags")?;
            let batch_timestamp = r.u64("batch_timestamp")?;
            let dropped = r.u32("dropped")?;
            let topic = r.str16("topic")?;
            let count = r.u32("count")?;
            let records = RecordBlock::parse_in(k, count, r.rest())?;
            Frame::Deliver {
                sub_id,
                flags,
                batch_timestamp,
                dropped,
                topic,
                records,
            }
        }
        kind::CONSUMER_OPEN => consumer_open(&mut r)?,
        kind::CONSUMER_OK => Frame::ConsumerOk {
            request_id: r.u64("request_id")?,
            consumer_id: r.u32("consumer_id")?,
            next_offset: r.u64("next_offset")?,
        },
        kind::FETCH => Frame::Fetch {
            consumer_id: r.u32("consumer_id")?,
            max_records: r.u32("max_records")?,
            max_wait_ms: r.u32("max_wait_ms")?,
        },
        kind::RECORDS => {
            let consumer_id = r.u32("consumer_id")?;
            let count = r.u32("count")?;
            let records = StoredBlock::parse_in(k, count, r.rest())?;
            Frame::Records {
                consumer_id,
                records,
            }
        }
        kind::CREDIT => Frame::Credit {
            consumer_id: r.u32("consumer_id")?,
            credit: r.u32("credit")?,
        },
        kind::ACK => {
            let consumer_id = r.u32("consumer_id")?;
            let count = r.u32("count")? as usize;
            if count.saturating_mul(8) != r.remaining() {
                return Err(r.malformed("ack count does not match offsets"));
            }
            let mut offsets = Vec::with_capacity(count);
            for _ in 0..count {
                offsets.push(r.u64("offset")?);
            }
            Frame::Ack {
                consumer_id,
                offsets,
            }
        }
        kind::CONSUMER_CLOSE => Frame::ConsumerClose {
            consumer_id: r.u32("consumer_id")?,
        },
        kind::STREAM_LIST => Frame::StreamList {
            request_id: r.u64("request_id")?,
        },
        kind::STREAM_LIST_OK => {
            let request_id = r.u64("request_id")?;
            let count = r.u16("count")?;
            let mut streams = Vec::new();
            for _ in 0..count {
                streams.push(stream_info(&mut r)?);
            }
            Frame::StreamListOk {
                request_id,
                streams,
            }
        }
        kind::STREAM_CREATE => Frame::StreamCreate {
            request_id: r.u64("request_id")?,
            spec: read_spec(&mut r)?,
        },
        kind::STREAM_UPDATE => {
            let request_id = r.u64("request_id")?;
            let name = r.str16("stream name")?;
            let (subjects, retention_bytes, retention_age_ms) = read_update(&mut r)?;
            Frame::StreamUpdate {
                request_id,
                name,
                subjects,
                retention_bytes,
                retention_age_ms,
            }
        }
        kind::STREAM_PURGE => Frame::StreamPurge {
            request_id: r.u64("request_id")?,
            name: r.str16("stream name")?,
        },
        kind::STREAM_DELETE => Frame::StreamDelete {
            request_id: r.u64("request_id")?,
            name: r.str16("stream name")?,
        },
        kind::STREAM_GET => Frame::StreamGet {
            request_id: r.u64("request_id")?,
            name: r.str16("stream name")?,
        },
        kind::STREAM_OK => Frame::StreamOk {
            request_id: r.u64("request_id")?,
            stream: read_detail(&mut r)?,
        },
        kind::CONSUMER_LIST => Frame::ConsumerList {
            request_id: r.u64("request_id")?,
            stream: r.str16("stream name")?,
            name: r.str16("consumer name")?,
        },
        kind::CONSUMER_LIST_OK => {
            let request_id = r.u64("request_id")?;
            let n = r.u32("count")?;
            // Grows only as consumers actually parse.
            let mut consumers = Vec::new();
            for _ in 0..n {
                consumers.push(read_consumer(&mut r)?);
            }
            Frame::ConsumerListOk {
                request_id,
                consumers,
            }
        }
        kind::CONSUMER_DELETE => Frame::ConsumerDelete {
            request_id: r.u64("request_id")?,
            stream: r.str16("stream name")?,
            name: r.str16("consumer name")?,
        },
        kind::DONE => Frame::Done {
            request_id: r.u64("request_id")?,
        },
        kind::ERROR => Frame::Error {
            request_id: r.u64("request_id")?,
            code: ErrorCode::from_u16(r.u16("code")?),
            message: r.str16("message")?,
        },
        other => return Err(WireError::UnknownFrame { kind: other }),
    };
    r.finish()?;
    Ok(f)
}

fn consumer_open(r: &mut Reader) -> Result<Frame, WireError> {
    let request_id = r.u64("request_id")?;
    let stream = r.str16("stream")?;
    let name = r.str16("name")?;
    let filter = r.str16("filter")?;
    let start = r.u8("start")?;
    let start_value = r.u64("start_value")?;
    let start = StartPosition::from_wire(start, start_value)
        .ok_or(r.malformed("unknown start position"))?;
    Ok(Frame::ConsumerOpen {
        request_id,
        stream,
        name,
        filter,
        start,
        ack_timeout_ms: r.u32("ack_timeout_ms")?,
        max_inflight: r.u32("max_inflight")?,
        push_credit: r.u32("push_credit")?,
    })
}

fn stream_info(r: &mut Reader) -> Result<StreamInfo, WireError> {
    let name = r.str16("stream name")?;
    let storage = Storage::from_u8(r.u8("storage")?).ok_or(r.malformed("unknown storage"))?;
    let n = r.u16("subject count")?;
    // Grows only as subjects actually parse: no allocation from the count.
    let mut subjects = Vec::new();
    for _ in 0..n {
        subjects.push(r.str16("subject")?);
    }
    Ok(StreamInfo {
        name,
        storage,
        subjects,
        first_offset: r.u64("first_offset")?,
        next_offset: r.u64("next_offset")?,
        records: r.u64("records")?,
        bytes: r.u64("bytes")?,
        segments: r.u32("segments")?,
        consumers: r.u32("consumers")?,
    })
}
