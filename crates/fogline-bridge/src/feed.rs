//! The bridges in the admin API's live feed: `bridges` (each bridge's status, as
//! `/api/v1/bridges` serves it, the first [`MAX_LISTED`]) and `bridges_count`, for the
//! dashboard's bridges panel.

use fogline_admin::FeedFields;
use serde_json::{json, Map, Value};

use crate::status::Bridges;

/// Most bridges one snapshot lists: it is sent every tick to every dashboard.
pub const MAX_LISTED: usize = 100;

/// The bridges' fields of the live feed.
#[derive(Clone, Debug)]
pub struct BridgesFeed(pub Bridges);

impl FeedFields for BridgesFeed {
    fn add(&self, into: &mut Map<String, Value>) {
        let list = self.0.list();
        into.insert("bridges_count".into(), json!(list.len()));
        let rows: Vec<_> = list.iter().take(MAX_LISTED).map(|b| b.snapshot()).collect();
        into.insert("bridges".into(), json!(rows));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::{BridgeStatus, Kind};

    #[test]
    fn the_feed_lists_each_bridge_with_its_state_and_error() {
        let bridges = Bridges::default();
        let b = BridgeStatus::new("core", Kind::KafkaOut, "kafka x -> t");
        b.fail("connection refused");
        bridges.add(b);
        let mut m = Map::new();
        BridgesFeed(bridges).add(&mut m);
        assert_eq!(m["bridges_count"], 1);
        assert_eq!(m["bridges"][0]["state"], "down");
        assert_eq!(m["bridges"][0]["last_error"], "connection refused");
    }
}
