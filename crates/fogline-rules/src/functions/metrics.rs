//! Functions on demand in `/metrics`, read at scrape time: per function, the totals of
//! every instance it ran (`fogline_function_records_in`, `..._records_out`,
//! `..._failures`, `..._restarts`) and its running instances (`fogline_function_instances`).

use fogline_admin::metrics::family;
use fogline_functions::InstanceState;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType::{Counter, Gauge};

use super::{FunctionService, Totals};

/// Reads every function's counters.
#[derive(Clone)]
pub struct FunctionsCollector(pub FunctionService);

impl std::fmt::Debug for FunctionsCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FunctionsCollector")
    }
}

type Sample = ([(&'static str, String); 1], f64);
/// A counter family: its name, its help and how to read it from a function's totals.
type Family = (&'static str, &'static str, fn(&Totals) -> u64);

impl Collector for FunctionsCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let totals = self.0.totals();
        let per = |f: fn(&Totals) -> u64| -> Vec<Sample> {
            let rows = totals.iter();
            rows.map(|(n, t)| ([("function", n.clone())], f(t) as f64))
                .collect()
        };
        let families: [Family; 4] = [
            (
                "fogline_function_records_in",
                "Records a function's instances received",
                |t| t.records_in,
            ),
            (
                "fogline_function_records_out",
                "Results a function's instances published",
                |t| t.records_out,
            ),
            (
                "fogline_function_failures",
                "Records a function's instances failed on",
                |t| t.failures,
            ),
            (
                "fogline_function_restarts",
                "Times a process function's child was restarted",
                |t| t.restarts,
            ),
        ];
        for (name, help, f) in families {
            family(&mut e, name, help, Counter, per(f))?;
        }
        let instances = self.0.instances(None);
        let running: Vec<Sample> = totals
            .keys()
            .map(|n| {
                let live = instances
                    .iter()
                    .filter(|i| &i.function == n && i.state == InstanceState::Running)
                    .count();
                ([("function", n.clone())], live as f64)
            })
            .collect();
        family(
            &mut e,
            "fogline_function_instances",
            "Running instances of a function",
            Gauge,
            running,
        )
    }
}
