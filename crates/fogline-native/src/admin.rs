//! Management requests: list, create, change, purge, delete and describe streams; list and
//! delete durable consumers. Each runs on a blocking thread (a change writes the node's
//! catalog, creates or deletes files) and is answered when done, by its request id. A
//! connection has at most [`MAX_INFLIGHT`] under way; the next waits, and so does the rest of
//! what the connection sends, so a client cannot fill the blocking pool.

/// Management requests one connection may have under way.
pub(crate) const MAX_INFLIGHT: usize = 4;

use std::sync::Arc;
use std::time::Duration;

use bytesize::ByteSize;
use fogline_broker::{
    Broker, BrokerError, ConsumerInfo, StorageMode, Stream, StreamChange, StreamConfig,
};
use fogline_wire::{
    ConsumerDetail, ErrorCode, Frame, Storage, Str, StreamDetail, StreamInfo, StreamSpec,
    NODE_DEFAULT,
};

use crate::connection::Conn;
use crate::errors::broker_code;

/// One [`StreamInfo`] per stream of the broker (`StreamList`).
pub(crate) fn infos(broker: &Broker) -> Vec<StreamInfo> {
    broker
        .streams()
        .iter()
        .map(|s| {
            let st = s.stats();
            StreamInfo {
                name: s.name().into(),
                storage: wire_storage(s.storage()),
                subjects: s.subjects().iter().map(|f| f.as_str().into()).collect(),
                first_offset: st.first_offset,
                next_offset: st.next_offset,
                records: st.records,
                bytes: st.bytes,
                segments: st.segments as u32,
                consumers: s.open_consumers() as u32,
            }
        })
        .collect()
}

/// Starts a management request, once one of the connection's slots is free; its answer is
/// queued when it is done.
pub(crate) async fn handle(conn: &Arc<Conn>, frame: Frame) {
    if let Some((request_id, what, change)) = target(&frame) {
        if let Err(e) = conn.access().check_admin(&what, change) {
            conn.error(request_id, broker_code(&e), e.to_string());
            return;
        }
    }
    let Ok(slot) = conn.admin_slots.clone().acquire_owned().await else {
        return;
    };
    let conn = conn.clone();
    tokio::spawn(async move {
        let _slot = slot;
        let broker = conn.broker.clone();
        let (request_id, answer) =
            match tokio::task::spawn_blocking(move || apply(&broker, frame)).await {
                Ok(done) => done,
                Err(e) => {
                    conn.error(
                        0,
                        ErrorCode::Internal,
                        format!("management request failed: {e}"),
                    );
                    return;
                }
            };
        match answer {
            Ok(reply) => conn.reply(&reply),
            Err(e) => conn.error(request_id, broker_code(&e), e.to_string()),
        }
    });
}

/// What a management request asks the ACL: its id, the `$fogline/admin/` topic it
/// concerns and whether it changes something.
pub(crate) fn target(frame: &Frame) -> Option<(u64, String, bool)> {
    Some(match frame {
        Frame::StreamList { request_id } => (*request_id, "streams".into(), false),
        Frame::StreamCreate { request_id, spec } => {
            (*request_id, format!("streams/{}", spec.name), true)
        }
        Frame::StreamUpdate {
            request_id, name, ..
        }
        | Frame::StreamPurge { request_id, name }
        | Frame::StreamDelete { request_id, name } => {
            (*request_id, format!("streams/{name}"), true)
        }
        Frame::StreamGet { request_id, name } => (*request_id, format!("streams/{name}"), false),
        Frame::ConsumerList {
            request_id, stream, ..
        } if stream.is_empty() => (*request_id, "consumers".into(), false),
        Frame::ConsumerList {
            request_id, stream, ..
        } => (*request_id, format!("consumers/{stream}"), false),
        Frame::ConsumerDelete {
            request_id,
            stream,
            name,
        } => (*request_id, format!("consumers/{stream}/{name}"), true),
        _ => return None,
    })
}

/// Applies one request (blocking); returns its id and its answer.
fn apply(broker: &Broker, frame: Frame) -> (u64, Result<Frame, BrokerError>) {
    let ok = |request_id: u64, r: Result<Arc<Stream>, BrokerError>| {
        (
            request_id,
            r.map(|s| Frame::StreamOk {
                request_id,
                stream: detail(&s),
            }),
        )
    };
    match frame {
        Frame::StreamCreate { request_id, spec } => ok(
            request_id,
            spec_config(spec).and_then(|c| broker.create_stream(c)),
        ),
        Frame::StreamUpdate {
            request_id,
            name,
            subjects,
            retention_bytes,
            retention_age_ms,
        } => {
            let change = StreamChange {
                subjects: subjects.map(|s| s.iter().map(|x| x.to_string()).collect()),
                retention_bytes: retention_bytes.map(|b| setting(b).map(ByteSize::b)),
                retention_age: retention_age_ms.map(|a| setting(a).map(Duration::from_millis)),
                storage: None,
            };
            ok(request_id, broker.update_stream(name.as_str(), change))
        }
        Frame::StreamPurge { request_id, name } => {
            ok(request_id, broker.purge_stream(name.as_str()))
        }
        Frame::StreamGet { request_id, name } => ok(
            request_id,
            broker
                .stream(name.as_str())
                .ok_or_else(|| BrokerError::UnknownStream(name.to_string())),
        ),
        Frame::StreamDelete { request_id, name } => (
            request_id,
            broker
                .delete_stream(name.as_str())
                .map(|()| Frame::Done { request_id }),
        ),
        Frame::ConsumerList {
            request_id,
            stream,
            name,
        } => {
            let list = if name.is_empty() {
                broker.consumers((!stream.is_empty()).then_some(stream.as_str()))
            } else {
                broker
                    .consumer_info(stream.as_str(), name.as_str())
                    .map(|c| vec![c])
            };
            (
                request_id,
                list.map(|l| Frame::ConsumerListOk {
                    request_id,
                    consumers: l.iter().map(consumer_detail).collect(),
                }),
            )
        }
        Frame::ConsumerDelete {
            request_id,
            stream,
            name,
        } => (
            request_id,
            broker
                .delete_consumer(stream.as_str(), name.as_str())
                .map(|()| Frame::Done { request_id }),
        ),
        other => (
            0,
            Err(BrokerError::Invalid(format!(
                "frame kind 0x{:02x} is not a management request",
                other.kind()
            ))),
        ),
    }
}

/// A wire setting: [`NODE_DEFAULT`] is `None` (the node's default), anything else the value.
fn setting(v: u64) -> Option<u64> {
    (v != NODE_DEFAULT).then_some(v)
}

fn spec_config(spec: StreamSpec) -> Result<StreamConfig, BrokerError> {
    let segment = setting(spec.segment_bytes);
    if segment == Some(0) {
        return Err(BrokerError::Invalid("segment_bytes must not be 0".into()));
    }
    Ok(StreamConfig {
        name: spec.name.to_string(),
        subjects: spec.subjects.iter().map(|s| s.to_string()).collect(),
        storage: spec.storage.map(|s| match s {
            Storage::Memory => StorageMode::Memory,
            Storage::Mmap => StorageMode::Mmap,
            Storage::Fsync => StorageMode::Fsync,
        }),
        retention_bytes: setting(spec.retention_bytes).map(ByteSize::b),
        retention_age: setting(spec.retention_age_ms).map(Duration::from_millis),
        segment_bytes: segment.map(ByteSize::b),
        sql: None,
    })
}

fn wire_storage(s: StorageMode) -> Storage {
    match s {
        StorageMode::Memory => Storage::Memory,
        StorageMode::Mmap => Storage::Mmap,
        StorageMode::Fsync => Storage::Fsync,
    }
}

/// A stream as `StreamOk` describes it.
fn detail(s: &Stream) -> StreamDetail {
    let st = s.stats();
    let cfg = s.config();
    let (bytes, age) = s.retention();
    StreamDetail {
        name: s.name().into(),
        storage: wire_storage(s.storage()),
        subjects: s.subjects().iter().map(|f| Str::from(f.as_str())).collect(),
        retention_bytes: bytes.unwrap_or(0),
        retention_age_ms: age.map_or(0, |a| u64::try_from(a.as_millis()).unwrap_or(u64::MAX)),
        segment_bytes: s.segment_bytes(),
        retention_bytes_default: cfg.retention_bytes.is_none(),
        retention_age_default: cfg.retention_age.is_none(),
        first_offset: st.first_offset,
        next_offset: st.next_offset,
        records: st.records,
        bytes: st.bytes,
        segments: st.segments as u32,
        consumers: s.open_consumers() as u32,
        first_timestamp: st.first_timestamp.unwrap_or(0),
        last_timestamp: st.last_timestamp.unwrap_or(0),
    }
}

fn consumer_detail(c: &ConsumerInfo) -> ConsumerDetail {
    ConsumerDetail {
        stream: c.stream.as_str().into(),
        name: c.name.as_deref().unwrap_or("").into(),
        open: c.open,
        filter: c.filter.as_deref().unwrap_or("").into(),
        ack_floor: c.ack_floor,
        cursor: c.cursor,
        pending_acks: c.pending_acks,
        lag: c.lag,
        delivered: c.delivered,
        redelivered: c.redelivered,
        opened_at: c.opened_at_us.unwrap_or(0),
    }
}
