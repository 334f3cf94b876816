//! `/metrics`: the node in the OpenMetrics text format (prometheus-client), read at scrape
//! time from the broker's counters, the streams, the consumers, the connections and
//! `/proc`. Nothing is counted on the data path for the metrics' sake: they read what the
//! broker keeps anyway (relaxed atomics).
//!
//! Names are `fogline_*` in base units; counters end in `_total` (the encoder adds it).
//! Labels are bounded: `protocol`, `reason`, `stream`, `consumer` (durable consumers only,
//! which an operator names), `component`, `state`; never a client id, a topic or a profile.

use std::sync::Arc;

use fogline_broker::{Broker, DropReason, Protocol};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::state::{ComponentState, Components};

/// The broker's, the process's and the components' metrics.
pub struct NodeCollector {
    broker: Broker,
    data_dir: std::path::PathBuf,
    started_at_us: u64,
    components: Arc<dyn Components>,
}

impl std::fmt::Debug for NodeCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeCollector").finish_non_exhaustive()
    }
}

/// Registers the node's own metrics in `registry` (components add their collectors too).
pub fn register(
    registry: &mut Registry,
    broker: Broker,
    data_dir: std::path::PathBuf,
    started_at_us: u64,
    components: Arc<dyn Components>,
) {
    registry.register_collector(Box::new(NodeCollector {
        broker,
        data_dir,
        started_at_us,
        components,
    }));
}

/// Encodes one metric family: `name` with `help`, one sample per label set.
pub fn family<V, L>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    samples: impl IntoIterator<Item = (L, V)>,
) -> Result<(), std::fmt::Error>
where
    V: Into<f64>,
    L: prometheus_client::encoding::EncodeLabelSet,
{
    let mut m = encoder.encode_descriptor(name, help, None, kind)?;
    for (labels, v) in samples {
        let mut e = m.encode_family(&labels)?;
        match kind {
            MetricType::Counter => {
                e.encode_counter::<NoLabelSet, f64, f64>(&v.into(), None)?;
            }
            _ => e.encode_gauge(&v.into())?,
        }
    }
    Ok(())
}

/// One unlabelled sample.
pub fn single(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    kind: MetricType,
    v: f64,
) -> Result<(), std::fmt::Error> {
    let mut m = encoder.encode_descriptor(name, help, None, kind)?;
    match kind {
        MetricType::Counter => m.encode_counter::<NoLabelSet, f64, f64>(&v, None),
        _ => m.encode_gauge(&v),
    }
}

fn per_protocol(f: impl Fn(Protocol) -> f64) -> Vec<([(&'static str, &'static str); 1], f64)> {
    Protocol::ALL
        .iter()
        .map(|&p| ([("protocol", p.as_str())], f(p)))
        .collect()
}

impl Collector for NodeCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use MetricType::{Counter, Gauge};
        let b = &self.broker;
        let info =
            prometheus_client::metrics::info::Info::new([("version", env!("CARGO_PKG_VERSION"))]);
        info.encode(e.encode_descriptor(
            "fogline_build",
            "fogline's version",
            None,
            info.metric_type(),
        )?)?;
        single(
            &mut e,
            "fogline_start_time_seconds",
            "When the node started, seconds since the UNIX epoch",
            Gauge,
            self.started_at_us as f64 / 1e6,
        )?;
        let components = self.components.components();
        family(
            &mut e,
            "fogline_component_up",
            "1 while a component is running, else 0",
            Gauge,
            components.iter().map(|c| {
                (
                    [("component", c.name.clone())],
                    f64::from(u8::from(c.state == ComponentState::Running)),
                )
            }),
        )?;
        let clients = b.clients();
        family(
            &mut e,
            "fogline_connections",
            "Connections now (in-process links are protocol link)",
            Gauge,
            per_protocol(|p| clients.count(p) as f64),
        )?;
        family(
            &mut e,
            "fogline_connections_accepted",
            "Connections accepted since the node started",
            Counter,
            per_protocol(|p| clients.accepted(p) as f64),
        )?;
        let traffic: Vec<_> = Protocol::ALL
            .iter()
            .map(|&p| (p, clients.traffic(p)))
            .collect();
        let by = |f: fn(&fogline_broker::TrafficSnapshot) -> u64| {
            traffic
                .iter()
                .map(move |(p, t)| ([("protocol", p.as_str())], f(t) as f64))
                .collect::<Vec<_>>()
        };
        family(
            &mut e,
            "fogline_records_in",
            "Records published, by the protocol of their publisher",
            Counter,
            by(|t| t.records_in),
        )?;
        family(
            &mut e,
            "fogline_records_out",
            "Records delivered (live and to consumers), by the protocol of their receiver",
            Counter,
            by(|t| t.records_out),
        )?;
        family(
            &mut e,
            "fogline_received_bytes",
            "Bytes of records published (topics, headers and payloads)",
            Counter,
            by(|t| t.bytes_in),
        )?;
        family(
            &mut e,
            "fogline_sent_bytes",
            "Bytes of records delivered",
            Counter,
            by(|t| t.bytes_out),
        )?;
        let stats = b.stats();
        family(
            &mut e,
            "fogline_records_dropped",
            "Records that never reached a subscriber that wanted them, by reason",
            Counter,
            DropReason::ALL
                .iter()
                .map(|&r| ([("reason", r.as_str())], stats.dropped(r) as f64)),
        )?;
        single(
            &mut e,
            "fogline_slow_consumer_disconnects",
            "Subscribers cut off as slow consumers",
            Counter,
            stats
                .slow_consumers
                .load(std::sync::atomic::Ordering::Relaxed) as f64,
        )?;
        single(
            &mut e,
            "fogline_subscriptions",
            "Live subscriptions",
            Gauge,
            b.subscription_count() as f64,
        )?;
        self.encode_auth(&mut e)?;
        self.encode_profiles(&mut e)?;
        self.encode_streams(&mut e)?;
        self.encode_process(&mut e)
    }
}

impl NodeCollector {
    /// Associative Rendezvous: interests, announced producers and routing by profile.
    fn encode_auth(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use std::sync::atomic::Ordering::Relaxed;
        let guard = self.broker.guard();
        let stats = guard.stats();
        single(
            e,
            "fogline_auth_failures",
            "Logins refused (bad user name or password, anonymous where not allowed), every protocol",
            MetricType::Counter,
            stats.auth_failures.load(Relaxed) as f64,
        )?;
        family(
            e,
            "fogline_acl_denials",
            "Operations the ACL refused, by kind (read: subscriptions' routes that left out a topic)",
            MetricType::Counter,
            fogline_broker::Denied::ALL
                .iter()
                .map(|&d| ([("operation", d.as_str())], stats.denied(d) as f64)),
        )
    }

    fn encode_profiles(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use std::sync::atomic::Ordering::Relaxed;
        use MetricType::{Counter, Gauge};
        let b = &self.broker;
        single(
            e,
            "fogline_interests",
            "Live subscriptions with an interest profile",
            Gauge,
            b.interest_count() as f64,
        )?;
        let producers = crate::views::ProducerCounts::of(b);
        family(
            e,
            "fogline_producers",
            "Producers announced with notify_interest: waiting (nobody is interested) or sending",
            Gauge,
            [
                ([("state", "waiting")], producers.waiting as f64),
                ([("state", "sending")], producers.sending as f64),
            ],
        )?;
        let stats = b.stats();
        single(
            e,
            "fogline_profile_routed_records",
            "Records queued for subscriptions by their interest (once per subscription)",
            Counter,
            stats.profile_routed.load(Relaxed) as f64,
        )?;
        single(
            e,
            "fogline_profile_skipped_headers",
            "Record headers that could not be profile attributes (bad names, binary values)",
            Counter,
            stats.profile_skipped.load(Relaxed) as f64,
        )?;
        single(
            e,
            "fogline_announcements",
            "Producers announced with notify_interest since the node started",
            Counter,
            stats.announcements.load(Relaxed) as f64,
        )
    }

    fn encode_streams(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use MetricType::{Counter, Gauge};
        let streams = self.broker.streams();
        let stats: Vec<_> = streams.iter().map(|s| (s.name(), s.stats())).collect();
        let each = |f: fn(&fogline_log::LogStats) -> f64| {
            stats
                .iter()
                .map(move |(n, st)| ([("stream", n.to_string())], f(st)))
                .collect::<Vec<_>>()
        };
        family(
            e,
            "fogline_stream_records",
            "Records a stream retains",
            Gauge,
            each(|s| s.records as f64),
        )?;
        family(
            e,
            "fogline_stream_bytes",
            "Bytes a stream retains",
            Gauge,
            each(|s| s.bytes as f64),
        )?;
        family(
            e,
            "fogline_stream_segments",
            "Segments of a stream",
            Gauge,
            each(|s| s.segments as f64),
        )?;
        family(
            e,
            "fogline_stream_next_offset",
            "The offset a stream's next record gets",
            Gauge,
            each(|s| s.next_offset as f64),
        )?;
        family(
            e,
            "fogline_stream_storage_errors",
            "Storage errors of a stream (appends, flushes, reads)",
            Counter,
            streams.iter().map(|s| {
                (
                    [("stream", s.name().to_string())],
                    s.storage_errors() as f64,
                )
            }),
        )?;
        family(
            e,
            "fogline_stream_storage_full",
            "1 while a stream refuses records because its disk is full (reads go on)",
            Gauge,
            streams.iter().map(|s| {
                (
                    [("stream", s.name().to_string())],
                    if s.storage_full() { 1.0 } else { 0.0 },
                )
            }),
        )?;
        family(
            e,
            "fogline_stream_held_bytes",
            "Bytes a stream keeps past its retention for readers holding it (bridges)",
            Gauge,
            streams
                .iter()
                .map(|s| ([("stream", s.name().to_string())], s.held_bytes() as f64)),
        )?;
        family(
            e,
            "fogline_stream_hold_full",
            "1 while a stream refuses records because readers hold its retention past the margin",
            Gauge,
            streams.iter().map(|s| {
                (
                    [("stream", s.name().to_string())],
                    if s.hold_full() { 1.0 } else { 0.0 },
                )
            }),
        )?;
        family(
            e,
            "fogline_stream_hold_refused_records",
            "Records a stream refused because readers held its retention past the margin",
            Counter,
            streams
                .iter()
                .map(|s| ([("stream", s.name().to_string())], s.hold_refused() as f64)),
        )?;
        let mut m = e.encode_descriptor(
            "fogline_fsync_duration_seconds",
            "How long the flushes that make fsync streams' records durable took",
            None,
            MetricType::Histogram,
        )?;
        for s in streams.iter() {
            let h = s.flush_times().snapshot();
            let labels = [("stream", s.name().to_string())];
            m.encode_family(&labels)?
                .encode_histogram::<NoLabelSet>(h.sum, h.count, &h.buckets, None)?;
        }
        let consumers: Vec<_> = streams
            .iter()
            .flat_map(|s| s.consumers())
            .filter(|c| c.name.is_some())
            .collect();
        let labels = |c: &fogline_broker::ConsumerInfo| {
            [
                ("stream", c.stream.clone()),
                ("consumer", c.name.clone().unwrap_or_default()),
            ]
        };
        family(
            e,
            "fogline_consumer_lag_records",
            "Records of the stream at or past a durable consumer's acknowledged floor",
            Gauge,
            consumers.iter().map(|c| (labels(c), c.lag as f64)),
        )?;
        family(
            e,
            "fogline_consumer_pending_acks",
            "Records handed to a durable consumer and not acknowledged yet",
            Gauge,
            consumers.iter().map(|c| (labels(c), c.pending_acks as f64)),
        )?;
        family(
            e,
            "fogline_consumer_redeliveries",
            "Records handed to a durable consumer again after their ack timeout",
            Counter,
            consumers.iter().map(|c| (labels(c), c.redelivered as f64)),
        )
    }

    fn encode_process(&self, e: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use MetricType::{Counter, Gauge};
        let p = crate::process::read();
        let optional = [
            (
                "fogline_process_resident_memory_bytes",
                "Resident memory (mapped log pages included)",
                Gauge,
                p.rss_bytes.map(|v| v as f64),
            ),
            (
                "fogline_process_anonymous_memory_bytes",
                "Anonymous resident memory: heap and stacks",
                Gauge,
                p.anon_bytes.map(|v| v as f64),
            ),
            (
                "fogline_process_cpu_seconds",
                "CPU time used, user and system",
                Counter,
                p.cpu_seconds,
            ),
            (
                "fogline_process_threads",
                "Threads of the process",
                Gauge,
                p.threads.map(|v| v as f64),
            ),
            (
                "fogline_process_open_fds",
                "Open file descriptors",
                Gauge,
                p.open_fds.map(|v| v as f64),
            ),
            (
                "fogline_data_dir_free_bytes",
                "Bytes free on the data directory's file system",
                Gauge,
                crate::process::free_bytes(&self.data_dir).map(|v| v as f64),
            ),
        ];
        for (name, help, kind, v) in optional {
            if let Some(v) = v {
                single(e, name, help, kind, v)?;
            }
        }
        Ok(())
    }
}

/// The registry as OpenMetrics text (what Prometheus asks for first).
pub fn render(registry: &Registry) -> String {
    let mut out = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, registry) {
        tracing::error!(error = %e, "cannot encode the metrics");
    }
    out
}

/// OpenMetrics text as the classic Prometheus text format (version 0.0.4), for scrapers and
/// tools that do not take OpenMetrics (`promtool check metrics`, older agents, `curl`): a
/// counter's `# HELP` and `# TYPE` lines name it with its `_total` suffix, as its samples
/// do; an `info` metric becomes a gauge named `*_info` of value 1; `# EOF` goes. Samples are
/// unchanged: both formats write them alike.
pub fn to_classic(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len() + 256);
    let mut pending_help: Option<(&str, &str)> = None;
    for line in openmetrics.lines() {
        if line == "# EOF" {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            // Held until its TYPE line says which name the samples carry.
            if let Some((name, help)) = rest.split_once(' ') {
                pending_help = Some((name, help));
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let (name, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                "gaugehistogram" | "stateset" | "unknown" => (name.to_string(), "untyped"),
                k => (name.to_string(), k),
            };
            if let Some((_, help)) = pending_help.take() {
                out.push_str(&format!("# HELP {name} {help}\n"));
            }
            out.push_str(&format!("# TYPE {name} {kind}\n"));
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}
