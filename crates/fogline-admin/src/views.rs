//! The JSON the admin API answers with. Field names are part of the API (`openapi.json`
//! describes them, and a test holds every answer to it): add fields, never rename one.
//! Sizes are bytes, durations seconds, times RFC 3339 strings (UTC), absent values `null`.

use std::collections::HashMap;

use fogline_broker::{
    Broker, ClientInfo, ConsumerInfo, Protocol, SlowConsumerPolicy, StorageMode, Stream,
    SubscriptionInfo,
};
use serde::Serialize;

use crate::state::{AdminState, ComponentStatus};
use crate::time::rfc3339;

/// `GET /api/v1/node`.
#[derive(Debug, Serialize)]
pub struct NodeView {
    /// The node's id.
    pub id: String,
    /// fogline's version.
    pub version: &'static str,
    /// When the node started.
    pub started_at: String,
    /// Seconds since then.
    pub uptime_seconds: f64,
    /// Default storage of streams.
    pub storage: &'static str,
    /// The data directory.
    pub data_dir: String,
    /// Bytes its files take on disk.
    pub data_dir_bytes: Option<u64>,
    /// Bytes free on its file system.
    pub data_dir_free_bytes: Option<u64>,
    /// Process memory.
    pub memory: MemoryView,
    /// CPU time used, seconds.
    pub cpu_seconds: Option<f64>,
    /// Streams, connections and subscriptions now.
    pub counts: CountsView,
    /// The components, in start order.
    pub components: Vec<ComponentStatus>,
}

/// Process memory.
#[derive(Debug, Serialize)]
pub struct MemoryView {
    /// Resident set size (mapped log pages included).
    pub rss_bytes: Option<u64>,
    /// Anonymous resident memory: heap and stacks.
    pub anon_bytes: Option<u64>,
}

/// How many of each there are now.
#[derive(Debug, Serialize)]
pub struct CountsView {
    /// Streams.
    pub streams: usize,
    /// Connections of every protocol (in-process links included).
    pub connections: usize,
    /// Live subscriptions.
    pub subscriptions: usize,
    /// Live subscriptions with an interest profile.
    pub interests: usize,
    /// Producers announced with notify_interest that nobody is interested in.
    pub producers_waiting: usize,
    /// Producers announced with notify_interest that somebody is interested in.
    pub producers_sending: usize,
}

/// A stream.
#[derive(Debug, Serialize)]
pub struct StreamView {
    /// Its name.
    pub name: String,
    /// `memory`, `mmap` or `fsync`.
    pub storage: &'static str,
    /// The topic filters it captures.
    pub subjects: Vec<String>,
    /// Its `CREATE STREAM` statement (schema and format for SQL rules); `null`: schemaless
    /// JSON.
    pub sql: Option<String>,
    /// Retention by size in force; `null`: no limit.
    pub retention_bytes: Option<u64>,
    /// Retention by age in force, seconds; `null`: no limit.
    pub retention_age_seconds: Option<f64>,
    /// The retention by size is the node's default.
    pub retention_bytes_default: bool,
    /// The retention by age is the node's default.
    pub retention_age_default: bool,
    /// Size of a new segment.
    pub segment_bytes: u64,
    /// Records retained.
    pub records: u64,
    /// Bytes retained.
    pub bytes: u64,
    /// Segments.
    pub segments: usize,
    /// Oldest retained offset (the next offset when empty).
    pub first_offset: u64,
    /// Newest offset; `null` when empty.
    pub last_offset: Option<u64>,
    /// Offset the next record gets.
    pub next_offset: u64,
    /// Time of the oldest record; `null` when empty.
    pub first_time: Option<String>,
    /// Time of the newest record; `null` when empty.
    pub last_time: Option<String>,
    /// Consumers open on it.
    pub consumers_open: usize,
    /// Storage errors since the node started.
    pub storage_errors: u64,
    /// Readers (bridges) holding its retention: who, from which offset, the bytes kept
    /// past retention for them, the most it keeps, and whether it refuses records for
    /// that; `null` when nobody holds it and it refused nothing.
    pub retention_hold: Option<fogline_broker::HoldInfo>,
}

/// A consumer.
#[derive(Debug, Serialize)]
pub struct ConsumerView {
    /// The stream it reads.
    pub stream: String,
    /// Its durable name; `null` for an ephemeral consumer.
    pub name: Option<String>,
    /// Whether a client has it open.
    pub open: bool,
    /// Its topic filter, when open with one.
    pub filter: Option<String>,
    /// Every record below this offset was acknowledged.
    pub ack_floor: u64,
    /// The next offset it reads, when open.
    pub cursor: Option<u64>,
    /// Records handed out and not acknowledged.
    pub pending_acks: u64,
    /// Records of the stream at or past its floor (an upper bound with a filter).
    pub lag: u64,
    /// Records handed out for the first time since it was opened.
    pub delivered: u64,
    /// Records handed out again, since the node started.
    pub redelivered: u64,
    /// When it was opened; `null` when not open.
    pub opened_at: Option<String>,
    /// The user it belongs to (`null`: none; see docs/SECURITY.md).
    pub owner: Option<String>,
}

/// A connection.
#[derive(Debug, Serialize)]
pub struct ConnectionView {
    /// Node-wide id.
    pub id: u64,
    /// `native`, `mqtt`, `mqtt-ws` or `link`.
    pub protocol: &'static str,
    /// The client's name for itself (MQTT client id, native client name, component).
    pub client_id: Option<String>,
    /// The peer's address.
    pub address: String,
    /// When it connected.
    pub connected_at: String,
    /// Records it published.
    pub records_in: u64,
    /// Records delivered to it.
    pub records_out: u64,
    /// Bytes it published.
    pub bytes_in: u64,
    /// Bytes delivered to it.
    pub bytes_out: u64,
    /// Bytes waiting for it: in its subscriptions' queues and the front end's buffers.
    pub pending_bytes: u64,
    /// Its live subscriptions.
    pub subscriptions: usize,
}

/// A live subscription.
#[derive(Debug, Serialize)]
pub struct SubscriptionView {
    /// Node-wide id.
    pub id: u64,
    /// The connection that holds it (an MQTT session's, while connected); `null` when none.
    pub connection: Option<u64>,
    /// Its topic filter.
    pub filter: String,
    /// Delivered through the priority lane.
    pub priority: bool,
    /// `block`, `drop-oldest` or `disconnect`.
    pub policy: &'static str,
    /// Its shared-subscription group.
    pub group: Option<String>,
    /// The terms of its interest profile, when it routes by profile (docs/PROFILES.md).
    pub interest: Option<String>,
    /// Records waiting in its queue.
    pub queued_records: usize,
    /// Bytes waiting in its queue.
    pub queued_bytes: usize,
    /// Records its queue dropped (drop-oldest).
    pub dropped: u64,
}

/// The storage mode's name.
pub fn storage_name(s: StorageMode) -> &'static str {
    s.to_log().as_str()
}

fn policy_name(p: SlowConsumerPolicy) -> &'static str {
    match p {
        SlowConsumerPolicy::Block => "block",
        SlowConsumerPolicy::DropOldest => "drop-oldest",
        SlowConsumerPolicy::Disconnect => "disconnect",
    }
}

/// `GET /api/v1/node`.
pub fn node(state: &AdminState) -> NodeView {
    let b = &state.broker;
    let p = crate::process::read();
    let now = fogline_broker::now_micros();
    NodeView {
        id: state.node.id.clone(),
        version: env!("CARGO_PKG_VERSION"),
        started_at: rfc3339(state.node.started_at_us),
        uptime_seconds: now.saturating_sub(state.node.started_at_us) as f64 / 1e6,
        storage: storage_name(state.node.storage),
        data_dir: state.node.data_dir.display().to_string(),
        data_dir_bytes: crate::process::dir_bytes(&state.node.data_dir, 100_000),
        data_dir_free_bytes: crate::process::free_bytes(&state.node.data_dir),
        memory: MemoryView {
            rss_bytes: p.rss_bytes,
            anon_bytes: p.anon_bytes,
        },
        cpu_seconds: p.cpu_seconds,
        counts: {
            let producers = ProducerCounts::of(b);
            CountsView {
                streams: b.streams().len(),
                connections: b.clients().list().len(),
                subscriptions: b.subscription_count(),
                interests: b.interest_count(),
                producers_waiting: producers.waiting,
                producers_sending: producers.sending,
            }
        },
        components: state.components.components(),
    }
}

/// One stream.
pub fn stream(s: &Stream) -> StreamView {
    let st = s.stats();
    let cfg = s.config();
    let (bytes, age) = s.retention();
    StreamView {
        name: s.name().to_string(),
        storage: storage_name(s.storage()),
        subjects: s.subjects().to_vec(),
        sql: cfg.sql.clone(),
        retention_bytes: bytes,
        retention_age_seconds: age.map(|a| a.as_secs_f64()),
        retention_bytes_default: cfg.retention_bytes.is_none(),
        retention_age_default: cfg.retention_age.is_none(),
        segment_bytes: s.segment_bytes(),
        records: st.records,
        bytes: st.bytes,
        segments: st.segments,
        first_offset: st.first_offset,
        last_offset: (st.records > 0).then(|| st.next_offset.saturating_sub(1)),
        next_offset: st.next_offset,
        first_time: st.first_timestamp.map(rfc3339),
        last_time: st.last_timestamp.map(rfc3339),
        consumers_open: s.open_consumers(),
        storage_errors: s.storage_errors(),
        retention_hold: s.hold_info(),
    }
}

/// Every stream.
pub fn streams(b: &Broker) -> Vec<StreamView> {
    b.streams().iter().map(|s| stream(s)).collect()
}

/// One consumer.
pub fn consumer(c: &ConsumerInfo) -> ConsumerView {
    ConsumerView {
        stream: c.stream.clone(),
        name: c.name.clone(),
        open: c.open,
        filter: c.filter.clone(),
        ack_floor: c.ack_floor,
        cursor: c.cursor,
        pending_acks: c.pending_acks,
        lag: c.lag,
        delivered: c.delivered,
        redelivered: c.redelivered,
        opened_at: c.opened_at_us.map(rfc3339),
        owner: c.owner.clone(),
    }
}

/// Every connection, with what waits for it.
pub fn connections(b: &Broker) -> Vec<ConnectionView> {
    let subs = b.subscriptions();
    let mut by_origin: HashMap<u64, (usize, u64)> = HashMap::new();
    for s in &subs {
        let e = by_origin.entry(s.origin).or_default();
        e.0 += 1;
        e.1 += s.queued_bytes as u64;
    }
    b.clients()
        .list()
        .into_iter()
        .map(|c: ClientInfo| {
            let (n, queued) = by_origin.get(&c.origin).copied().unwrap_or_default();
            ConnectionView {
                id: c.id,
                protocol: c.protocol.as_str(),
                client_id: c.name,
                address: c.addr,
                connected_at: rfc3339(c.connected_at_us),
                records_in: c.traffic.records_in,
                records_out: c.traffic.records_out,
                bytes_in: c.traffic.bytes_in,
                bytes_out: c.traffic.bytes_out,
                pending_bytes: c.pending_out + queued,
                subscriptions: n,
            }
        })
        .collect()
}

/// Every live subscription.
pub fn subscriptions(b: &Broker) -> Vec<SubscriptionView> {
    let owners: HashMap<u64, u64> = b
        .clients()
        .list()
        .into_iter()
        .map(|c| (c.origin, c.id))
        .collect();
    b.subscriptions()
        .into_iter()
        .map(|s: SubscriptionInfo| SubscriptionView {
            id: s.id,
            connection: owners.get(&s.origin).copied(),
            filter: s.filter,
            priority: s.priority,
            policy: policy_name(s.policy),
            group: s.group,
            interest: s.interest,
            queued_records: s.queued_records,
            queued_bytes: s.queued_bytes,
            dropped: s.dropped,
        })
        .collect()
}

/// A producer registered with notify_interest.
#[derive(Debug, Serialize)]
pub struct ProducerView {
    /// Its registration id.
    pub id: u64,
    /// The connection that announced it; `null` when none (an in-process one).
    pub connection: Option<u64>,
    /// The topic it would publish on.
    pub topic: String,
    /// Its data profile.
    pub profile: String,
    /// Somebody is interested (it is sending) or not (it is waiting).
    pub interested: bool,
}

/// `GET /api/v1/producers`.
pub fn producers(b: &Broker) -> Vec<ProducerView> {
    let owners: HashMap<u64, u64> = b
        .clients()
        .list()
        .into_iter()
        .map(|c| (c.origin, c.id))
        .collect();
    b.producers()
        .into_iter()
        .map(|p| ProducerView {
            id: p.id,
            connection: owners.get(&p.origin).copied(),
            topic: p.topic,
            profile: p.profile,
            interested: p.interested,
        })
        .collect()
}

/// The live subscriptions with an interest profile, in id order (none listed at all while
/// there are none, without walking every subscription).
pub fn interests(b: &Broker) -> Vec<SubscriptionView> {
    if b.interest_count() == 0 {
        return Vec::new();
    }
    let mut out: Vec<_> = subscriptions(b)
        .into_iter()
        .filter(|s| s.interest.is_some())
        .collect();
    out.sort_by_key(|s| s.id);
    out
}

/// Announced producers by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProducerCounts {
    /// Nobody is interested: they wait.
    pub waiting: usize,
    /// Somebody is interested: they send.
    pub sending: usize,
}

impl ProducerCounts {
    /// The broker's producers, counted.
    pub fn of(b: &Broker) -> ProducerCounts {
        ProducerCounts::count(b.producers().iter().map(|p| p.interested))
    }

    /// Counts producers from whether each one has somebody interested.
    pub fn count(interested: impl IntoIterator<Item = bool>) -> ProducerCounts {
        let mut c = ProducerCounts::default();
        for on in interested {
            if on {
                c.sending += 1;
            } else {
                c.waiting += 1;
            }
        }
        c
    }
}

/// Connections now, per protocol (every protocol listed, zeros included).
pub fn connection_counts(b: &Broker) -> Vec<(&'static str, usize)> {
    Protocol::ALL
        .iter()
        .map(|&p| (p.as_str(), b.clients().count(p)))
        .collect()
}
