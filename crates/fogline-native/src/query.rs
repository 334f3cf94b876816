//! The `Query` frame: the node's store answers on a task of its own (a query may wait for
//! the index to catch up), and the page goes back as one `QueryOk`.

use std::sync::Arc;

use fogline_broker::StoreQuery;
use fogline_wire::{ErrorCode, Frame, StoredBlock, StoredRecordRef};

use crate::connection::Conn;
use crate::errors::broker_code;

/// Most record bytes in one `QueryOk` (as a `Records` frame holds): a page past it ends
/// early, its `next` at the last record sent.
const MAX_PAGE_BYTES: usize = 4 << 20;

/// A time bound of the wire (`none`: open) as an option.
fn bound(v: u64, none: u64) -> Option<u64> {
    (v != none).then_some(v)
}

/// Answers a `Query` or `Delete` frame (PROTOCOL.md).
pub(crate) fn handle(conn: &Arc<Conn>, frame: Frame) {
    match frame {
        Frame::Delete {
            request_id,
            stream,
            interest,
            since,
            until,
        } => {
            let what = format!("store/{}", stream.as_str());
            if let Err(e) = conn.access().check_admin(&what, true) {
                conn.error(request_id, broker_code(&e), e.to_string());
                return;
            }
            let q = StoreQuery {
                stream: stream.to_string(),
                interest: interest.to_string(),
                since_us: bound(since, 0),
                until_us: bound(until, u64::MAX),
                ..StoreQuery::default()
            };
            delete(conn, request_id, q);
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
            let name = if stream.is_empty() {
                "default"
            } else {
                stream.as_str()
            };
            if let Err(e) = crate::login::may_read(conn, name, "") {
                conn.error(request_id, broker_code(&e), e.to_string());
                return;
            }
            let q = StoreQuery {
                stream: stream.to_string(),
                interest: interest.to_string(),
                since_us: bound(since, 0),
                until_us: bound(until, u64::MAX),
                latest_by: (!latest_by.is_empty()).then(|| latest_by.to_string()),
                limit: limit as usize,
                after: bound(after, u64::MAX),
                newest_first: flags & 1 != 0,
            };
            query(conn, request_id, q);
        }
        _ => {}
    }
}

/// The node's store, or an error answered for `request_id`.
fn store(conn: &Conn, request_id: u64) -> Option<Arc<dyn fogline_broker::StoreQueries>> {
    let store = conn.broker.store_queries();
    if store.is_none() {
        conn.error(
            request_id,
            ErrorCode::Invalid,
            "this node has no store (see [store] streams)",
        );
    }
    store
}

/// The `Delete` frame: answered by `Deleted` once the deletion is durable.
fn delete(conn: &Arc<Conn>, request_id: u64, q: StoreQuery) {
    let Some(store) = store(conn, request_id) else {
        return;
    };
    let conn = conn.clone();
    tokio::spawn(async move {
        match store.delete(q).await {
            Ok(count) => conn.reply(&Frame::Deleted { request_id, count }),
            Err(e) => conn.error(request_id, broker_code(&e), e.to_string()),
        }
    });
}

fn query(conn: &Arc<Conn>, request_id: u64, q: StoreQuery) {
    let Some(store) = store(conn, request_id) else {
        return;
    };
    let conn = conn.clone();
    tokio::spawn(async move {
        let page = match store.query(q).await {
            Ok(p) => p,
            Err(e) => {
                conn.error(request_id, broker_code(&e), e.to_string());
                return;
            }
        };
        let mut bytes = 0usize;
        let mut taken = 0usize;
        for r in &page.records {
            bytes += r.payload.len() + r.headers.len() + r.topic.len() + 32;
            if taken > 0 && bytes > MAX_PAGE_BYTES {
                break;
            }
            taken += 1;
        }
        let records = &page.records[..taken];
        let next = if taken < page.records.len() {
            records.last().map(|r| r.offset)
        } else {
            page.next
        };
        let block = StoredBlock::from_records(records.iter().map(|r| StoredRecordRef {
            offset: r.offset,
            timestamp: r.timestamp,
            delivery_count: 1,
            topic: std::str::from_utf8(&r.topic).unwrap_or(""),
            headers: &r.headers,
            payload: &r.payload,
        }));
        match block {
            Ok(records) => conn.reply(&Frame::QueryOk {
                request_id,
                next: next.unwrap_or(u64::MAX),
                records,
            }),
            Err(e) => conn.error(request_id, ErrorCode::Internal, e.to_string()),
        }
    });
}
