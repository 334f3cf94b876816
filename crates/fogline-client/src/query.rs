//! [`Client::query`]: the node's store, found by data profile, time and topic (the native
//! `Query` frame).

use fogline_wire::{Frame, StoredRecord};

use crate::client::{unexpected, Client};
use crate::error::ClientError;

/// What to look for in the store (see PROTOCOL.md, `Query`).
#[derive(Clone, Debug, Default)]
pub struct StoreQuery {
    /// The indexed stream; empty: the store's only one, or `default`.
    pub stream: String,
    /// An interest profile (`sensor=li* alt=100.. @site/#`); empty: every record.
    pub interest: String,
    /// Only records at or after this time (microseconds).
    pub since: Option<u64>,
    /// Only records at or before this time (microseconds).
    pub until: Option<u64>,
    /// Only the newest record per value of this attribute.
    pub latest_by: Option<String>,
    /// Page size (0: the node's largest).
    pub limit: u32,
    /// Paging cursor: the previous page's `next`.
    pub after: Option<u64>,
    /// Newest first.
    pub newest_first: bool,
}

/// One page of stored records.
#[derive(Clone, Debug)]
pub struct StorePage {
    /// The records.
    pub records: Vec<StoredRecord>,
    /// The `after` of the next page; `None` when this was the last.
    pub next: Option<u64>,
}

impl Client {
    /// One page of the store's records matching `q`.
    ///
    /// # Errors
    /// `Server` (`Invalid`: a bad interest or a node without a store; `UnknownStream`);
    /// `Disconnected`, `Timeout`.
    pub async fn query(&self, q: &StoreQuery) -> Result<StorePage, ClientError> {
        let id = self.inner.request_id();
        let frame = Frame::Query {
            request_id: id,
            stream: q.stream.as_str().into(),
            interest: q.interest.as_str().into(),
            since: q.since.unwrap_or(0),
            until: q.until.unwrap_or(u64::MAX),
            latest_by: q.latest_by.as_deref().unwrap_or("").into(),
            limit: if q.limit == 0 { u32::MAX } else { q.limit },
            after: q.after.unwrap_or(u64::MAX),
            flags: u8::from(q.newest_first),
        };
        match self.inner.call(id, &frame).await? {
            Frame::QueryOk { next, records, .. } => {
                let mut records = records;
                let mut out = Vec::with_capacity(records.count() as usize);
                while let Some(r) = records.pop_front() {
                    out.push(r);
                }
                Ok(StorePage {
                    records: out,
                    next: (next != u64::MAX).then_some(next),
                })
            }
            other => Err(unexpected(&other)),
        }
    }

    /// R-Pulsar's delete: forgets from the store the records `q` selects (its stream,
    /// interest and time range; paging is ignored); returns how many.
    ///
    /// # Errors
    /// As [`Client::query`].
    pub async fn delete_stored(&self, q: &StoreQuery) -> Result<u64, ClientError> {
        let id = self.inner.request_id();
        let frame = Frame::Delete {
            request_id: id,
            stream: q.stream.as_str().into(),
            interest: q.interest.as_str().into(),
            since: q.since.unwrap_or(0),
            until: q.until.unwrap_or(u64::MAX),
        };
        match self.inner.call(id, &frame).await? {
            Frame::Deleted { count, .. } => Ok(count),
            other => Err(unexpected(&other)),
        }
    }
}
