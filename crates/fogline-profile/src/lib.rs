//! Associative Rendezvous profiles (R-Pulsar, paper 004 section IV-D1), usable alone.
//!
//! A **data profile** is a set of attributes and attribute-value pairs that a record carries
//! (`type=drone sensor=lidar lat=40.0583 lon=-74.4056 urgent`). An **interest profile** is a
//! conjunction of predicates over data profiles (`type=drone sensor=Li* lat=40..41`). An
//! attribute predicate is true iff the data profile has the attribute; an attribute-value
//! predicate is true iff the data profile has the attribute and its value satisfies the
//! predicate (exact keyword, partial keyword, numeric range, geographic box or radius).
//!
//! - `model`: the types ([`DataProfile`], [`Interest`], [`Predicate`]).
//! - `index`: [`InterestIndex`], one data profile against many interests without a scan.
#![deny(missing_docs)]

pub mod index;
pub mod model;

pub use index::{InterestId, InterestIndex};
pub use model::{DataProfile, GeoPoint, Interest, Predicate, Term};
