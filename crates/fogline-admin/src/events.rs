//! `GET /api/v1/events`: the live feed the dashboard draws from, as Server-Sent Events. Every
//! `events_interval` one `snapshot` event carries the node's totals (records and bytes in
//! and out, so a reader derives rates from two of them), connections per protocol,
//! subscriptions, interests and announced producers (counts, and the first
//! [`MAX_LISTED`] of each in `rendezvous`), streams, consumers, components and memory.
//! Components add fields of their own through [`FeedFields`](crate::FeedFields) (the rules
//! component adds `rules`); readers ignore the ones they do not know.

use std::convert::Infallible;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use serde::Serialize;

use crate::state::{AdminState, ComponentStatus};
use crate::views::{self, ConsumerView, ProducerView, StreamView, SubscriptionView};

/// Most interests, and most producers, one snapshot lists: it is sent every tick to every
/// reader, and both are as many as clients make.
pub const MAX_LISTED: usize = 100;

/// One snapshot of the feed.
#[derive(Serialize)]
pub struct Snapshot {
    /// When it was taken, microseconds since the UNIX epoch.
    pub time_us: u64,
    /// Seconds since the node started.
    pub uptime_seconds: f64,
    /// Records and bytes the node took in and sent out since it started (every protocol).
    pub totals: Totals,
    /// Connections per protocol.
    pub connections: std::collections::BTreeMap<&'static str, usize>,
    /// Live subscriptions.
    pub subscriptions: usize,
    /// Live subscriptions with an interest profile.
    pub interests: usize,
    /// Announced producers nobody is interested in.
    pub producers_waiting: usize,
    /// Announced producers somebody is interested in.
    pub producers_sending: usize,
    /// The first interests and producers, by id.
    pub rendezvous: RendezvousView,
    /// The streams.
    pub streams: Vec<StreamView>,
    /// The consumers.
    pub consumers: Vec<ConsumerView>,
    /// The components.
    pub components: Vec<ComponentStatus>,
    /// Resident memory of the process, bytes.
    pub rss_bytes: Option<u64>,
    /// Fields the components add.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// Associative Rendezvous now: the first [`MAX_LISTED`] of each list, the counts beside
/// them in [`Snapshot`] say how many there are.
#[derive(Serialize)]
pub struct RendezvousView {
    /// Live subscriptions with an interest profile.
    pub interests: Vec<SubscriptionView>,
    /// Producers announced with notify_interest, waiting or sending.
    pub producers: Vec<ProducerView>,
}

/// Totals since the node started.
#[derive(Serialize)]
pub struct Totals {
    /// Records published.
    pub records_in: u64,
    /// Records delivered.
    pub records_out: u64,
    /// Bytes published.
    pub bytes_in: u64,
    /// Bytes delivered.
    pub bytes_out: u64,
}

/// The node now.
pub fn snapshot(s: &AdminState) -> Snapshot {
    let b = &s.broker;
    let now = fogline_broker::now_micros();
    let mut totals = Totals {
        records_in: 0,
        records_out: 0,
        bytes_in: 0,
        bytes_out: 0,
    };
    for p in fogline_broker::Protocol::ALL {
        let t = b.clients().traffic(p);
        totals.records_in += t.records_in;
        totals.records_out += t.records_out;
        totals.bytes_in += t.bytes_in;
        totals.bytes_out += t.bytes_out;
    }
    let mut interests = views::interests(b);
    let n_interests = interests.len();
    interests.truncate(MAX_LISTED);
    let mut producers = views::producers(b);
    let counts = views::ProducerCounts::count(producers.iter().map(|p| p.interested));
    producers.truncate(MAX_LISTED);
    let mut extra = serde_json::Map::new();
    for f in &s.feed {
        f.add(&mut extra);
    }
    Snapshot {
        time_us: now,
        uptime_seconds: now.saturating_sub(s.node.started_at_us) as f64 / 1e6,
        totals,
        connections: views::connection_counts(b).into_iter().collect(),
        subscriptions: b.subscription_count(),
        interests: n_interests,
        producers_waiting: counts.waiting,
        producers_sending: counts.sending,
        rendezvous: RendezvousView {
            interests,
            producers,
        },
        streams: views::streams(b),
        consumers: b
            .consumers(None)
            .unwrap_or_default()
            .iter()
            .map(views::consumer)
            .collect(),
        components: s.components.components(),
        rss_bytes: crate::process::read().rss_bytes,
        extra,
    }
}

pub(crate) async fn events(
    State(s): State<AdminState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut tick = tokio::time::interval(s.events_interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let feed = stream::unfold((s, tick), |(s, mut tick)| async move {
        tick.tick().await;
        let event = Event::default()
            .event("snapshot")
            .json_data(snapshot(&s))
            .unwrap_or_else(|e| Event::default().event("error").data(e.to_string()));
        Some((Ok(event), (s, tick)))
    });
    Sse::new(feed).keep_alive(KeepAlive::default())
}
