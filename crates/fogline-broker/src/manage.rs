//! Streams and consumers managed while the node runs: create, change, purge and delete
//! streams; list, inspect and delete durable consumers; list subscriptions.
//!
//! Every change to the set of streams or their settings holds the catalog's lock, applies
//! the change, and writes the catalog before it returns (see `catalog`), so a change that
//! returned survives a restart and `kill -9`. These calls block on the disk (a new log's
//! directory, the catalog's fsync, a purge's or a delete's file removals): call them off the
//! runtime threads (`spawn_blocking`).
//!
//! Order of a delete, for crash safety: the stream is retired (its consumers' reads fail,
//! its position writer stops), taken out of routing, its directory renamed into
//! `<data_dir>/node/trash/` (so a crash never leaves a directory a new stream of the same
//! name would adopt), the catalog written, and the trash removed. A crash after the rename
//! and before the catalog write brings the stream back, empty; whatever is left in the
//! trash is removed at the next start.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytesize::ByteSize;

use crate::broker::Broker;
use crate::config::{valid_stream_name, StorageMode, StreamConfig};
use crate::error::BrokerError;
use crate::queue::CloseReason;
use crate::stream::{check_subjects, ConsumerInfo, Stream};
use crate::SlowConsumerPolicy;

/// A change to a stream's settings; `None` fields stay as they are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamChange {
    /// New subject filters (at least one).
    pub subjects: Option<Vec<String>>,
    /// New retention by size: `Some(None)` the broker's default, `Some(Some(0))` no limit.
    pub retention_bytes: Option<Option<ByteSize>>,
    /// New retention by age: `Some(None)` the broker's default, `Some(Some(0s))` no limit.
    pub retention_age: Option<Option<Duration>>,
    /// Storage cannot change once a stream exists: a value other than its own is refused.
    pub storage: Option<StorageMode>,
}

/// One live subscription, as the admin API shows it.
#[derive(Clone, Debug)]
pub struct SubscriptionInfo {
    /// Broker-wide id.
    pub id: u64,
    /// Its topic filter.
    pub filter: String,
    /// The origin of the connection or session that holds it (a client's `origin`).
    pub origin: u64,
    /// Delivered through the priority lane.
    pub priority: bool,
    /// What happens when its queue is full.
    pub policy: SlowConsumerPolicy,
    /// Its shared-subscription group, if any.
    pub group: Option<String>,
    /// The terms of its interest profile (text form), when it routes by profile.
    pub interest: Option<String>,
    /// Records and bytes waiting in its queue.
    pub queued_records: usize,
    /// Bytes waiting in its queue.
    pub queued_bytes: usize,
    /// Records its queue dropped (drop-oldest policy) so far.
    pub dropped: u64,
    /// Cut off as a slow consumer (its holder has not noticed yet).
    pub cut_off: bool,
}

impl Broker {
    /// Creates a stream and starts routing to it. Blocks.
    ///
    /// # Errors
    /// `StreamExists`; `Invalid` for a bad name, subjects or storage; `Storage`/`Io` when its
    /// log or the catalog cannot be written (nothing is created then).
    pub fn create_stream(&self, cfg: StreamConfig) -> Result<Arc<Stream>, BrokerError> {
        if !valid_stream_name(&cfg.name) {
            return Err(BrokerError::Invalid(format!(
                "invalid stream name {:?}: use 1-64 of A-Z a-z 0-9 . _ -, not starting with \
                 '.', and not {}",
                cfg.name,
                crate::config::RESERVED_NAMES.join(" or ")
            )));
        }
        check_subjects(&cfg.name, &cfg.subjects).map_err(BrokerError::Invalid)?;
        let broker = &self.inner.config;
        let storage = cfg.storage.unwrap_or(broker.storage);
        if storage != StorageMode::Memory && broker.storage == StorageMode::Memory {
            return Err(BrokerError::Invalid(format!(
                "stream {:?}: this node keeps no files (its storage is memory), so it cannot \
                 keep a {} stream",
                cfg.name,
                storage_name(storage)
            )));
        }
        let mut catalog = self.inner.catalog.lock();
        if self.stream(&cfg.name).is_some() {
            return Err(BrokerError::StreamExists(cfg.name));
        }
        if storage != StorageMode::Memory {
            let dir = broker.data_dir.join(&cfg.name);
            if dir_has_entries(&dir) {
                return Err(BrokerError::Invalid(format!(
                    "stream {:?}: {} exists and is not a stream of this node; move it away \
                     or choose another name",
                    cfg.name,
                    dir.display()
                )));
            }
        }
        let (stream, _) = Stream::open(&cfg, broker)?;
        let stream = Arc::new(stream);
        catalog.put(cfg);
        if let Err(e) = catalog.save() {
            catalog.remove(stream.name());
            return Err(e);
        }
        self.replace_streams(|list| list.push(stream.clone()));
        tracing::info!(stream = %stream.name(), "stream created");
        Ok(stream)
    }

    /// Changes a stream's subjects and retention. Blocks.
    ///
    /// # Errors
    /// `UnknownStream`; `Invalid` for bad subjects or a storage change; `Io` when the catalog
    /// cannot be written (the stream then keeps its old settings).
    pub fn update_stream(
        &self,
        name: &str,
        change: StreamChange,
    ) -> Result<Arc<Stream>, BrokerError> {
        let mut catalog = self.inner.catalog.lock();
        let stream = self
            .stream(name)
            .ok_or_else(|| BrokerError::UnknownStream(name.to_string()))?;
        if let Some(s) = change.storage {
            if s != stream.storage() {
                return Err(BrokerError::Invalid(format!(
                    "stream {name:?} is {}: a stream's storage cannot change; create a new \
                     stream with the storage you want",
                    storage_name(stream.storage())
                )));
            }
        }
        if let Some(subjects) = &change.subjects {
            check_subjects(name, subjects).map_err(BrokerError::Invalid)?;
        }
        let before = stream.config();
        let mut after = before.clone();
        if let Some(subjects) = change.subjects {
            after.subjects = subjects;
        }
        if let Some(b) = change.retention_bytes {
            after.retention_bytes = b;
        }
        if let Some(a) = change.retention_age {
            after.retention_age = a;
        }
        if after == before {
            return Ok(stream);
        }
        catalog.put(after.clone());
        if let Err(e) = catalog.save() {
            catalog.put(before);
            return Err(e);
        }
        stream.set_subjects(after.subjects)?;
        stream.set_retention(
            after.retention_bytes,
            after.retention_age,
            &self.inner.config,
        );
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
        self.drop_routes();
        // The new limits take effect now, not at the next retention tick.
        stream.enforce_retention(crate::batch::now_micros());
        tracing::info!(stream = %name, "stream changed");
        Ok(stream)
    }

    /// Drops every record of a stream; offsets go on where they were, consumers below the new
    /// first offset resume from it. Blocks.
    ///
    /// # Errors
    /// `UnknownStream`, or `Storage` when the log could not drop them (see
    /// `fogline_log::Log::purge`).
    pub fn purge_stream(&self, name: &str) -> Result<Arc<Stream>, BrokerError> {
        let _catalog = self.inner.catalog.lock();
        let stream = self
            .stream(name)
            .ok_or_else(|| BrokerError::UnknownStream(name.to_string()))?;
        let report = stream.purge()?;
        tracing::info!(stream = %name, %report, "stream purged");
        Ok(stream)
    }

    /// Deletes a stream with its records and consumers. Its open consumers' next reads fail
    /// with `UnknownStream`. Blocks.
    ///
    /// # Errors
    /// `UnknownStream`, or `Io` when its directory cannot be moved away or the catalog cannot
    /// be written (the stream is then out of service until the node restarts).
    pub fn delete_stream(&self, name: &str) -> Result<(), BrokerError> {
        let mut catalog = self.inner.catalog.lock();
        let stream = self
            .stream(name)
            .ok_or_else(|| BrokerError::UnknownStream(name.to_string()))?;
        stream.retire();
        self.replace_streams(|list| list.retain(|s| !Arc::ptr_eq(s, &stream)));
        let trash = match stream.dir() {
            Some(dir) => Some(self.move_to_trash(dir)?),
            None => None,
        };
        catalog.remove(name);
        catalog.save()?;
        drop(catalog);
        if let Some(t) = trash {
            if let Err(e) = std::fs::remove_dir_all(&t) {
                tracing::warn!(path = %t.display(), error = %e, "cannot remove a deleted stream's files; the next start removes them");
            }
        }
        tracing::info!(stream = %name, "stream deleted");
        Ok(())
    }

    /// Every consumer of every stream (durable ones open or not, ephemeral ones while open),
    /// or of `stream` only.
    ///
    /// # Errors
    /// `UnknownStream` when `stream` names none.
    pub fn consumers(&self, stream: Option<&str>) -> Result<Vec<ConsumerInfo>, BrokerError> {
        match stream {
            Some(name) => Ok(self
                .stream(name)
                .ok_or_else(|| BrokerError::UnknownStream(name.to_string()))?
                .consumers()),
            None => Ok(self.streams().iter().flat_map(|s| s.consumers()).collect()),
        }
    }

    /// The durable consumer `name` of `stream`.
    ///
    /// # Errors
    /// `UnknownStream`, `UnknownConsumer`.
    pub fn consumer_info(&self, stream: &str, name: &str) -> Result<ConsumerInfo, BrokerError> {
        self.stream(stream)
            .ok_or_else(|| BrokerError::UnknownStream(stream.to_string()))?
            .consumer(name)
            .ok_or_else(|| BrokerError::UnknownConsumer(name.to_string()))
    }

    /// Deletes the durable consumer `name` of `stream` (its position, in memory and on
    /// disk); one open now is refused. Blocks.
    ///
    /// # Errors
    /// `UnknownStream`, `UnknownConsumer`, `ConsumerInUse`, `Io`.
    pub fn delete_consumer(&self, stream: &str, name: &str) -> Result<(), BrokerError> {
        self.stream(stream)
            .ok_or_else(|| BrokerError::UnknownStream(stream.to_string()))?
            .delete_consumer(name)?;
        tracing::info!(stream, consumer = name, "consumer deleted");
        Ok(())
    }

    /// Every live subscription, by id.
    pub fn subscriptions(&self) -> Vec<SubscriptionInfo> {
        let mut out: Vec<SubscriptionInfo> = self
            .subscription_list()
            .into_iter()
            .map(|s| {
                let q = s.queue();
                SubscriptionInfo {
                    id: s.id(),
                    filter: s.filter().to_string(),
                    origin: s.origin(),
                    priority: s.options().priority,
                    policy: q.limits().policy,
                    group: s.options().group.clone(),
                    interest: s.interest().map(|i| {
                        fogline_profile::Interest {
                            terms: i.terms.clone(),
                            topic: None,
                        }
                        .to_string()
                    }),
                    queued_records: q.len(),
                    queued_bytes: q.bytes(),
                    dropped: q.dropped_total(),
                    cut_off: q.closed() == Some(CloseReason::SlowConsumer),
                }
            })
            .collect();
        out.sort_by_key(|s| s.id);
        out
    }

    /// Applies `f` to a copy of the stream list and installs it, then invalidates the routes.
    fn replace_streams(&self, f: impl FnOnce(&mut Vec<Arc<Stream>>)) {
        let mut list = self.inner.streams.write();
        let mut v: Vec<Arc<Stream>> = list.iter().cloned().collect();
        f(&mut v);
        *list = v.into();
        drop(list);
        // After the new list is in place: a route computed from the old one carries an
        // older generation (see `compute_route`).
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
        // A deleted stream's routes go with it, not when their topics come again.
        self.drop_routes();
    }

    /// Renames a deleted stream's directory into the trash; returns its new path.
    fn move_to_trash(&self, dir: &std::path::Path) -> Result<std::path::PathBuf, BrokerError> {
        let trash = trash_dir(&self.inner.config.data_dir);
        std::fs::create_dir_all(&trash)
            .map_err(|e| BrokerError::io(format!("creating {}", trash.display()), e))?;
        let name = dir.file_name().map_or_else(
            || "stream".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let to = trash.join(format!("{name}.{}", crate::batch::now_micros()));
        match std::fs::rename(dir, &to) {
            Ok(()) => {}
            // Nothing was ever written to it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(to),
            Err(e) => {
                return Err(BrokerError::io(
                    format!("moving {} to {}", dir.display(), to.display()),
                    e,
                ))
            }
        }
        if let Some(parent) = dir.parent() {
            let _ = std::fs::File::open(parent).and_then(|d| d.sync_all());
        }
        Ok(to)
    }
}

/// Where deleted streams' directories wait for removal.
pub(crate) fn trash_dir(data_dir: &std::path::Path) -> std::path::PathBuf {
    data_dir.join("node").join("trash")
}

/// Removes what a delete left in the trash (a crash between its rename and its removal).
pub(crate) fn empty_trash(data_dir: &std::path::Path) {
    let trash = trash_dir(data_dir);
    if trash.exists() {
        if let Err(e) = std::fs::remove_dir_all(&trash) {
            tracing::warn!(path = %trash.display(), error = %e, "cannot empty the trash of deleted streams");
        }
    }
}

fn storage_name(s: StorageMode) -> &'static str {
    s.to_log().as_str()
}

fn dir_has_entries(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some())
}
