//! The node's store, as the front ends reach it: the store component (`fogline-store`)
//! installs itself with [`Broker::set_store`], and a front end asks it through
//! [`StoreQueries`] without depending on it (the native protocol's `Query` frame).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use fogline_log::Record;

use crate::broker::Broker;
use crate::error::BrokerError;

/// A query of the store (the fields of the native `Query` frame, PROTOCOL.md).
#[derive(Clone, Debug, Default)]
pub struct StoreQuery {
    /// The indexed stream; empty: the store's only one, or `default`.
    pub stream: String,
    /// The interest profile, in text form.
    pub interest: String,
    /// Earliest timestamp (microseconds).
    pub since_us: Option<u64>,
    /// Latest timestamp (microseconds).
    pub until_us: Option<u64>,
    /// The newest record per value of this attribute.
    pub latest_by: Option<String>,
    /// Page size.
    pub limit: usize,
    /// Paging cursor.
    pub after: Option<u64>,
    /// Newest first.
    pub newest_first: bool,
}

/// One page of answers.
#[derive(Clone, Debug, Default)]
pub struct StorePage {
    /// The records.
    pub records: Vec<Record>,
    /// The next page's cursor.
    pub next: Option<u64>,
}

/// The future a query returns.
pub type QueryFuture<'a> =
    Pin<Box<dyn Future<Output = Result<StorePage, BrokerError>> + Send + 'a>>;

/// The future a delete returns: how many records were deleted.
pub type DeleteFuture<'a> = Pin<Box<dyn Future<Output = Result<u64, BrokerError>> + Send + 'a>>;

/// What the store offers the front ends.
pub trait StoreQueries: Send + Sync {
    /// Answers `q`.
    fn query(&self, q: StoreQuery) -> QueryFuture<'_>;

    /// Deletes what `q` selects (its interest and time range; paging is ignored).
    fn delete(&self, q: StoreQuery) -> DeleteFuture<'_>;
}

impl Broker {
    /// Installs the node's store (the store component does, at start).
    pub fn set_store(&self, store: Arc<dyn StoreQueries>) {
        *self.inner.store.write() = Some(store);
    }

    /// The node's store, if it has one.
    pub fn store_queries(&self) -> Option<Arc<dyn StoreQueries>> {
        self.inner.store.read().clone()
    }
}
