//! The store in `/metrics`, read at scrape time.

use fogline_admin::metrics::family;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType::Gauge;

use super::Store;

/// Reads every indexed stream's counts.
#[derive(Clone)]
pub struct StoreCollector(pub Store);

impl std::fmt::Debug for StoreCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreCollector")
    }
}

impl Collector for StoreCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = self.0.stats();
        let per =
            |f: &dyn Fn(&super::StoreStats) -> f64| -> Vec<([(&'static str, String); 1], f64)> {
                stats
                    .iter()
                    .map(|s| ([("stream", s.stream.clone())], f(s)))
                    .collect()
            };
        family(
            &mut e,
            "fogline_store_records",
            "Records the store holds indexed by profile, per stream",
            Gauge,
            per(&|s| s.records as f64),
        )?;
        family(
            &mut e,
            "fogline_store_memory_bytes",
            "Memory of the store's index, per stream (an estimate)",
            Gauge,
            per(&|s| s.memory_bytes as f64),
        )?;
        family(
            &mut e,
            "fogline_store_lag_records",
            "Records of a stream the store has not indexed yet",
            Gauge,
            per(&|s| s.lag as f64),
        )?;
        family(
            &mut e,
            "fogline_store_deleted_records",
            "Records deleted from the store that the log still holds",
            Gauge,
            per(&|s| s.deleted as f64),
        )
    }
}
