//! The node's read budget in `/metrics` (see `fogline_net::intake`).

use std::sync::Arc;

use fogline_admin::metrics::single;
use fogline_net::intake::ReadBudget;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType::{Counter, Gauge};

/// Reads the budget at scrape time.
#[derive(Debug)]
pub(crate) struct IntakeCollector(pub Arc<ReadBudget>);

impl Collector for IntakeCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let b = &self.0;
        single(
            &mut e,
            "fogline_read_buffer_bytes",
            "Bytes connections hold of frames they are still receiving, beyond their base buffers",
            Gauge,
            b.used() as f64,
        )?;
        single(
            &mut e,
            "fogline_read_buffer_limit_bytes",
            "The node's read buffer budget ([node] read_buffer_budget)",
            Gauge,
            b.limit() as f64,
        )?;
        single(
            &mut e,
            "fogline_read_buffer_waits",
            "Times a connection stopped reading until the read buffer budget had room",
            Counter,
            b.waits() as f64,
        )?;
        single(
            &mut e,
            "fogline_frame_timeouts",
            "Connections closed because a frame did not arrive whole within [node] frame_timeout",
            Counter,
            b.expired() as f64,
        )
    }
}
