//! The bridges in `/metrics`, read at scrape time.

use std::sync::atomic::Ordering::Relaxed;

use fogline_admin::metrics::family;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType::{Counter, Gauge};

use crate::status::{BridgeStatus, Bridges, State};

/// Reads every bridge's status.
#[derive(Clone, Debug)]
pub struct BridgeCollector(pub Bridges);

type Labels = [(&'static str, String); 2];
/// A counter: its name, help and reading.
type CounterOf = (&'static str, &'static str, fn(&BridgeStatus) -> u64);

impl Collector for BridgeCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let all = self.0.list();
        let per = |f: &dyn Fn(&BridgeStatus) -> f64| -> Vec<(Labels, f64)> {
            all.iter()
                .map(|s| {
                    let labels = [("bridge", s.name.clone()), ("kind", s.kind.as_str().into())];
                    (labels, f(s))
                })
                .collect()
        };
        let counters: [CounterOf; 6] = [
            (
                "fogline_bridge_records",
                "Records a bridge carried (acknowledged by the other side, or stored here)",
                |s| s.records.load(Relaxed),
            ),
            (
                "fogline_bridge_bytes",
                "Payload bytes a bridge carried",
                |s| s.bytes.load(Relaxed),
            ),
            (
                "fogline_bridge_errors",
                "Failures of a bridge: connections lost or refused, requests failed",
                |s| s.errors.load(Relaxed),
            ),
            (
                "fogline_bridge_dropped",
                "Records lost before a bridge carried them (retention, or over the size limit)",
                |s| s.dropped.load(Relaxed),
            ),
            (
                "fogline_bridge_skipped",
                "Records a bridge found already carried when it resumed",
                |s| s.skipped.load(Relaxed),
            ),
            (
                "fogline_bridge_duplicates",
                "Records the other side may hold twice (resent after a reconnect)",
                |s| s.duplicates.load(Relaxed),
            ),
        ];
        for (name, help, f) in counters {
            family(&mut e, name, help, Counter, per(&|s| f(s) as f64))?;
        }
        family(
            &mut e,
            "fogline_bridge_lag_records",
            "Records waiting for a bridge",
            Gauge,
            per(&|s| s.lag_records.load(Relaxed) as f64),
        )?;
        family(
            &mut e,
            "fogline_bridge_lag_seconds",
            "Age of the oldest record waiting for a bridge",
            Gauge,
            per(&|s| s.lag_us.load(Relaxed) as f64 / 1e6),
        )?;
        let states: Vec<([(&'static str, String); 3], f64)> = all
            .iter()
            .flat_map(|s| {
                let now = s.state();
                State::ALL.into_iter().map(move |st| {
                    let labels = [
                        ("bridge", s.name.clone()),
                        ("kind", s.kind.as_str().into()),
                        ("state", st.as_str().into()),
                    ];
                    (labels, if st == now { 1.0 } else { 0.0 })
                })
            })
            .collect();
        family(
            &mut e,
            "fogline_bridge_state",
            "1 for the state each bridge is in",
            Gauge,
            states,
        )
    }
}
