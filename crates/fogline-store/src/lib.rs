//! The queryable store's index: R-Pulsar's store and query by profile (paper 004, section
//! IV-C3, "the data storage layer where data is stored ... and is available to be queried",
//! with exact and wildcard queries), over fogline's append-only log.
//!
//! A record's data profile (section IV-D1: attributes and attribute-value pairs) is filed
//! under each of its attributes; a query is an [`Interest`] (exact keywords, partial
//! keywords, wildcards, numeric ranges, geographic boxes and radii, a topic filter) plus a
//! time range, answered with the offsets of the matching records, a page at a time. The
//! answers are exactly those of fogline-profile's reference evaluator,
//! [`Interest::matches`]: the structures only narrow down the candidates, and whatever they
//! do not decide exactly is checked with the reference predicates.
//!
//! The index keeps nothing on disk: the log is the store, and the node rebuilds the index at
//! start by scanning the log. It holds, per record, its offset, timestamp, topic and compact
//! profile (interned attribute and value ids), and per attribute value the sorted list of
//! records that carry it.
//!
//! - `attr`: one attribute's structures, one per predicate kind.
//! - `records`: the per-record columns.
//! - `index`: [`ProfileIndex`]: insert, retention, delete, compaction, memory.
//! - `query`: planning (cheapest term first), candidates, checks, paging, latest-per-key.
//! - [`service`]: the node's store: indexing streams, queries with their records, `delete`,
//!   the `[store]` section and the REST routes.
//!
//! ```
//! use fogline_profile::{DataProfile, Interest};
//! use fogline_store::{ProfileIndex, Query};
//!
//! let mut index = ProfileIndex::new();
//! let lidar = DataProfile::parse("type=drone sensor=lidar7 alt=120")?;
//! let radar = DataProfile::parse("type=drone sensor=radar2 alt=300")?;
//! index.insert(0, 1_000, "site/a", &lidar);
//! index.insert(1, 2_000, "site/b", &radar);
//! let page = index.query(&Query::new(Interest::parse("sensor=*dar? alt=100..200")?));
//! assert_eq!(page.hits.iter().map(|h| h.offset).collect::<Vec<_>>(), [0]);
//! # Ok::<(), fogline_profile::ParseError>(())
//! ```
#![deny(missing_docs)]

mod attr;
mod index;
#[cfg(test)]
mod proptests;
mod query;
mod records;
pub mod service;

use std::collections::HashMap;

pub use fogline_profile::{DataProfile, Interest};
pub use index::ProfileIndex;

pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// What to look for: records whose profile and topic the interest matches, within a time
/// range, a page at a time.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// The terms and the optional topic filter (MQTT filter semantics).
    pub interest: Interest,
    /// Only records at or after this time (microseconds).
    pub since_us: Option<u64>,
    /// Only records at or before this time (microseconds).
    pub until_us: Option<u64>,
    /// Latest per key: of the matching records, only the newest for each distinct value of
    /// this attribute. Records without the attribute are left out; records that carry it
    /// without a value (`urgent`) count as one more key.
    pub latest_by: Option<String>,
    /// Page size; 0 counts as 1.
    pub limit: usize,
    /// The paging cursor: only offsets above it (below it when `newest_first`).
    pub after: Option<u64>,
    /// Newest (highest offset) first instead of oldest first.
    pub newest_first: bool,
}

impl Query {
    /// Every record the interest matches, oldest first, in one page.
    pub fn new(interest: Interest) -> Query {
        Query {
            interest,
            since_us: None,
            until_us: None,
            latest_by: None,
            limit: usize::MAX,
            after: None,
            newest_first: false,
        }
    }
}

/// One page of answers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Page {
    /// The matching records, in the order asked for.
    pub hits: Vec<Hit>,
    /// The cursor for the next page (the last hit's offset); `None` when no more match.
    pub next: Option<u64>,
}

/// A matching record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Hit {
    /// Its offset in the log.
    pub offset: u64,
    /// Its timestamp, microseconds (raised to the previous record's, as the log does).
    pub timestamp_us: u64,
}
