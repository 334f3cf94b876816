//! The queryable store as a service of the node (`[store]`): for each configured stream, a
//! task feeds the [`ProfileIndex`] from the stream's log (from its first retained record at
//! start: the index is rebuilt, never trusted from disk), follows retention, and answers
//! queries with the records themselves, read back from the log by offset.
//!
//! A query first waits until the index has taken every record the stream had committed when
//! the query came (at most [`CATCH_UP`]): an acknowledged record is found by the next query.
//! `delete` forgets matching records from the index and writes their offsets to
//! `<data_dir>/.store/<stream>.deleted` before answering; the log keeps them (consumers
//! replaying the stream still see them) until retention removes them.

pub mod api;
pub mod config;
pub mod metrics;
mod tombstones;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use fogline_broker::{Broker, Stream};
use fogline_profile::DataProfile;
use parking_lot::{Mutex, RwLock};
use tokio::sync::watch;

use crate::{ProfileIndex, Query};
use tombstones::Tombstones;

/// Longest a query waits for the index to take what the stream holds.
pub const CATCH_UP: Duration = Duration::from_secs(5);
/// Records read from the log at a time while indexing.
const READ_BATCH: usize = 4096;

/// Why a store request failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The stream is not one the store indexes.
    #[error("stream {0:?} is not indexed by the store (see [store] streams)")]
    NotIndexed(String),
    /// A bad query.
    #[error("{0}")]
    Invalid(String),
    /// The log or the deletions file failed.
    #[error("{0}")]
    Storage(String),
}

/// One indexed stream.
struct Indexed {
    stream: Arc<Stream>,
    index: RwLock<ProfileIndex>,
    deleted: Mutex<Tombstones>,
    /// The next offset the index will take.
    progress: watch::Sender<u64>,
}

/// A record found by a query.
#[derive(Clone, Debug)]
pub struct Found {
    /// Its offset in the stream.
    pub offset: u64,
    /// Microseconds since the UNIX epoch.
    pub timestamp: u64,
    /// Its topic.
    pub topic: String,
    /// Its data profile.
    pub profile: DataProfile,
    /// The payload.
    pub payload: bytes::Bytes,
}

/// A page of answers.
#[derive(Clone, Debug)]
pub struct FoundPage {
    /// The records, in the query's order.
    pub records: Vec<Found>,
    /// The cursor of the next page (`after`), `None` when this was the last.
    pub next: Option<u64>,
}

/// The store: its indexed streams (cheap to clone).
#[derive(Clone)]
pub struct Store {
    streams: Arc<HashMap<String, Arc<Indexed>>>,
    max_page: usize,
}

/// Counts of one indexed stream, for the API and metrics.
#[derive(Clone, Debug, serde::Serialize)]
pub struct StoreStats {
    /// The stream.
    pub stream: String,
    /// Records indexed (retained and not deleted).
    pub records: usize,
    /// The index's memory, bytes (an estimate).
    pub memory_bytes: usize,
    /// Records of the stream not indexed yet.
    pub lag: u64,
    /// Records deleted with the delete action and still in the log.
    pub deleted: usize,
}

impl Store {
    /// The store over `cfg.streams` of `broker`; deletions kept under `dir` (`None`: in
    /// memory only, for a node that keeps no files). Indexing starts with [`Store::run`].
    ///
    /// # Errors
    /// A configured stream that does not exist, or an unreadable deletions file.
    pub fn open(
        broker: &Broker,
        cfg: &config::StoreConfig,
        dir: Option<std::path::PathBuf>,
    ) -> Result<Store, StoreError> {
        let mut streams = HashMap::new();
        for name in &cfg.streams {
            let stream = broker.stream(name).ok_or_else(|| {
                StoreError::Invalid(format!("[store] streams: no stream {name:?}"))
            })?;
            let path = dir.as_ref().map(|d| d.join(format!("{name}.deleted")));
            let deleted = Tombstones::load(path)
                .map_err(|e| StoreError::Storage(format!("deletions of {name}: {e}")))?;
            let (progress, _) = watch::channel(0);
            streams.insert(
                name.clone(),
                Arc::new(Indexed {
                    stream,
                    index: RwLock::new(ProfileIndex::new()),
                    deleted: Mutex::new(deleted),
                    progress,
                }),
            );
        }
        Ok(Store {
            streams: Arc::new(streams),
            max_page: cfg.max_page.max(1),
        })
    }

    /// Indexes every stream until `stop` turns true.
    pub async fn run(&self, stop: watch::Receiver<bool>) {
        let tasks: Vec<_> = self
            .streams
            .values()
            .map(|s| tokio::spawn(index_stream(s.clone(), stop.clone())))
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    }

    /// The indexed streams' counts, by name.
    pub fn stats(&self) -> Vec<StoreStats> {
        let mut v: Vec<StoreStats> = self
            .streams
            .iter()
            .map(|(name, s)| {
                let index = s.index.read();
                let end = s.stream.bounds().1;
                StoreStats {
                    stream: name.clone(),
                    records: index.len(),
                    memory_bytes: index.memory_bytes(),
                    lag: end.saturating_sub(*s.progress.borrow()),
                    deleted: s.deleted.lock().offsets.len(),
                }
            })
            .collect();
        v.sort_by(|a, b| a.stream.cmp(&b.stream));
        v
    }

    fn indexed(&self, stream: &str) -> Result<&Arc<Indexed>, StoreError> {
        self.streams
            .get(stream)
            .ok_or_else(|| StoreError::NotIndexed(stream.to_string()))
    }

    /// The stream a request names: `name`, or when empty the store's only stream, or
    /// `default`.
    pub fn resolve(&self, name: &str) -> String {
        match name {
            "" if self.streams.len() == 1 => {
                self.streams.keys().next().cloned().unwrap_or_default()
            }
            "" => "default".to_string(),
            n => n.to_string(),
        }
    }

    /// Answers `q` on `stream` (its limit capped at `max_page`) with the records as the log
    /// holds them, and the next page's cursor.
    ///
    /// # Errors
    /// An unknown stream; a log that cannot be read.
    pub async fn query_records(
        &self,
        stream: &str,
        mut q: Query,
    ) -> Result<(Vec<fogline_log::Record>, Option<u64>), StoreError> {
        let s = self.indexed(stream)?;
        catch_up(s).await;
        q.limit = q.limit.clamp(1, self.max_page);
        let page = s.index.read().query(&q);
        let mut records = Vec::with_capacity(page.hits.len());
        for hit in page.hits {
            let got = s
                .stream
                .read(hit.offset, 1, usize::MAX)
                .map_err(|e| StoreError::Storage(e.to_string()))?;
            // Gone meanwhile (retention): left out.
            if let Some(r) = got.into_iter().find(|r| r.offset == hit.offset) {
                records.push(r);
            }
        }
        Ok((records, page.next))
    }

    /// [`query_records`](Store::query_records), each record with its profile parsed.
    ///
    /// # Errors
    /// As `query_records`.
    pub async fn query(&self, stream: &str, q: Query) -> Result<FoundPage, StoreError> {
        let (records, next) = self.query_records(stream, q).await?;
        let records = records
            .into_iter()
            .map(|r| Found {
                offset: r.offset,
                timestamp: r.timestamp,
                topic: String::from_utf8_lossy(&r.topic).into_owned(),
                profile: DataProfile::from_header_block(&r.headers),
                payload: r.payload,
            })
            .collect();
        Ok(FoundPage { records, next })
    }

    /// The `delete` action: forgets the records matching `q`'s interest and time range,
    /// durably; returns how many.
    ///
    /// # Errors
    /// An unknown stream; the deletions file cannot be written (nothing is deleted then).
    pub async fn delete(&self, stream: &str, q: &Query) -> Result<usize, StoreError> {
        let s = self.indexed(stream)?;
        catch_up(s).await;
        let gone = s
            .index
            .write()
            .delete_with(q, |offsets| s.deleted.lock().add(offsets))
            .map_err(|e| StoreError::Storage(format!("cannot record the deletion: {e}")))?;
        Ok(gone.len())
    }
}

/// The broker's form of a query as the store's, with the stream it names.
fn from_broker(
    store: &Store,
    q: fogline_broker::StoreQuery,
) -> Result<(String, Query), fogline_broker::BrokerError> {
    let interest = fogline_profile::Interest::parse(&q.interest)
        .map_err(|e| fogline_broker::BrokerError::Invalid(format!("interest: {e}")))?;
    let query = Query {
        interest,
        since_us: q.since_us,
        until_us: q.until_us,
        latest_by: q.latest_by,
        limit: q.limit,
        after: q.after,
        newest_first: q.newest_first,
    };
    Ok((store.resolve(&q.stream), query))
}

fn to_broker(e: StoreError) -> fogline_broker::BrokerError {
    use fogline_broker::BrokerError;
    match e {
        StoreError::NotIndexed(s) => BrokerError::UnknownStream(s),
        StoreError::Invalid(m) => BrokerError::Invalid(m),
        StoreError::Storage(m) => BrokerError::Invalid(format!("store: {m}")),
    }
}

impl fogline_broker::StoreQueries for Store {
    fn query(&self, q: fogline_broker::StoreQuery) -> fogline_broker::QueryFuture<'_> {
        Box::pin(async move {
            let (stream, query) = from_broker(self, q)?;
            let (records, next) = self
                .query_records(&stream, query)
                .await
                .map_err(to_broker)?;
            Ok(fogline_broker::StorePage { records, next })
        })
    }

    fn delete(&self, q: fogline_broker::StoreQuery) -> fogline_broker::DeleteFuture<'_> {
        Box::pin(async move {
            let (stream, query) = from_broker(self, q)?;
            let n = Store::delete(self, &stream, &query)
                .await
                .map_err(to_broker)?;
            Ok(n as u64)
        })
    }
}

/// Waits until the index took what the stream had committed now (at most [`CATCH_UP`]).
async fn catch_up(s: &Indexed) {
    let end = s.stream.bounds().1;
    let mut rx = s.progress.subscribe();
    let _ = tokio::time::timeout(CATCH_UP, rx.wait_for(|&p| p >= end)).await;
}

async fn index_stream(s: Arc<Indexed>, mut stop: watch::Receiver<bool>) {
    let mut cursor = 0u64;
    // The first retained offset retention was last applied for.
    let mut floor = 0u64;
    loop {
        if *stop.borrow() || s.stream.is_retired() {
            return;
        }
        let (first, _) = s.stream.bounds();
        if first > floor {
            s.index.write().remove_before(first);
            s.deleted.lock().forget_before(first);
            floor = first;
            cursor = cursor.max(first);
        }
        let records = match s.stream.read(cursor, READ_BATCH, 8 << 20) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(stream = s.stream.name(), error = %e, "the store cannot read its stream; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = stop.changed() => {}
                }
                continue;
            }
        };
        if records.is_empty() {
            s.progress.send_replace(cursor);
            tokio::select! {
                _ = s.stream.wait_past(cursor) => {}
                _ = stop.changed() => {}
                // Retention moves the first offset without appending anything.
                _ = tokio::time::sleep(Duration::from_secs(5)) => {}
            }
            continue;
        }
        {
            // Locks in one order everywhere: the index, then the deletions.
            let mut index = s.index.write();
            let deleted = s.deleted.lock();
            for r in &records {
                if deleted.offsets.contains(&r.offset) {
                    continue;
                }
                let topic = String::from_utf8_lossy(&r.topic);
                index.insert_block(r.offset, r.timestamp, &topic, &r.headers);
            }
        }
        cursor = records.last().map_or(cursor, |r| r.offset + 1);
        s.progress.send_replace(cursor);
        // Let queries and publishers in between batches.
        tokio::task::yield_now().await;
    }
}
