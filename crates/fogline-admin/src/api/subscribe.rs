//! `GET /api/v1/subscribe?filter=F[&filter=G...]`: live records on topic filters as
//! Server-Sent Events, one `message` event per record. The dashboard's alerts feed reads the
//! topics rules publish to through it.
//!
//! Why here and not in the rules component: a rule's results reach users by being published
//! (its `publish` actions, its triggers' actions, the functions they start), so reading those
//! topics shows every kind of result with no hook in the rules' hot path, and works for any
//! topic (a function's output, a device's), while the admin API keeps not knowing the rules.
//!
//! Bounds: at most [`MAX_FILTERS`] filters, each a subscription on the in-process link with
//! the `drop-oldest` policy, drained at once by a task into one ring of [`RING`] records per
//! request, each cut to [`MAX_PAYLOAD`] bytes (`size` is the whole). So a request holds at
//! most about `RING * MAX_PAYLOAD` bytes (not the broker's per-subscription queue, 64 MiB by
//! default), no record block stays referenced, and a slow browser never holds a publisher
//! back: what it could not take is dropped, oldest first, and counted (`dropped` in each
//! event). The tasks and subscriptions end when the response is dropped: when the browser
//! goes away, or the admin server stops.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::get;
use axum::Router;
use fogline_broker::link::LinkSubscription;
use fogline_broker::{SlowConsumerPolicy, SubscribeOptions};
use futures_util::stream::{self, Stream};
use parking_lot::Mutex;
use serde::Serialize;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::error::ApiError;
use crate::state::AdminState;

/// Most filters one request may name.
pub const MAX_FILTERS: usize = 16;
/// Most payload bytes kept and sent per record.
pub const MAX_PAYLOAD: usize = 1024;
/// Most records waiting for one request's reader.
pub const RING: usize = 256;

pub(super) fn routes() -> Router<AdminState> {
    Router::new().route("/api/v1/subscribe", get(subscribe))
}

/// One record as the feed sends it.
#[derive(Serialize)]
struct Record {
    /// The filter it matched.
    filter: String,
    topic: String,
    /// Microseconds since the UNIX epoch.
    time_us: u64,
    /// The first [`MAX_PAYLOAD`] bytes, as UTF-8 (invalid bytes replaced).
    payload: String,
    /// The whole payload's size, bytes.
    size: usize,
    /// Records this request dropped so far (its reader was too slow).
    dropped: u64,
}

#[derive(Default)]
struct Ring {
    records: VecDeque<Record>,
    dropped: u64,
    /// Subscriptions still open.
    open: usize,
}

/// What the response's stream owns: dropping it stops the pumps (and so unsubscribes).
struct Feed {
    ring: Arc<Mutex<Ring>>,
    ready: Arc<Notify>,
    pumps: Vec<JoinHandle<()>>,
}

impl Drop for Feed {
    fn drop(&mut self) {
        self.pumps.iter().for_each(JoinHandle::abort);
    }
}

async fn subscribe(
    State(s): State<AdminState>,
    query: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let Query(pairs) = query.map_err(|e| ApiError::invalid(e.body_text()))?;
    let mut filters = Vec::new();
    for (k, v) in pairs {
        if k != "filter" {
            return Err(ApiError::invalid(format!(
                "unknown query parameter {k:?} (only filter)"
            )));
        }
        if !filters.contains(&v) {
            filters.push(v);
        }
    }
    if filters.is_empty() {
        return Err(ApiError::invalid("at least one filter=... is required"));
    }
    if filters.len() > MAX_FILTERS {
        return Err(ApiError::invalid(format!(
            "at most {MAX_FILTERS} filters, not {}",
            filters.len()
        )));
    }
    let link = s.broker.link("admin-subscribe");
    let opts = SubscribeOptions {
        policy: Some(SlowConsumerPolicy::DropOldest),
        ..SubscribeOptions::default()
    };
    // All made before answering: a bad filter is a 400, not an empty feed.
    let subs = filters
        .iter()
        .map(|f| link.subscribe(f, opts.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let ring = Arc::new(Mutex::new(Ring {
        open: subs.len(),
        ..Ring::default()
    }));
    let ready = Arc::new(Notify::new());
    let pumps = subs
        .into_iter()
        .map(|sub| tokio::spawn(pump(sub, ring.clone(), ready.clone())))
        .collect();
    let feed = Feed { ring, ready, pumps };
    Ok(Sse::new(stream::unfold(feed, next)).keep_alive(KeepAlive::default()))
}

/// Moves a subscription's records into the ring as they come, dropping the oldest waiting.
async fn pump(mut sub: LinkSubscription, ring: Arc<Mutex<Ring>>, ready: Arc<Notify>) {
    let filter = sub.filter().to_string();
    let mut lost = 0;
    while let Some(m) = sub.recv().await {
        let shown = &m.payload[..m.payload.len().min(MAX_PAYLOAD)];
        let mut r = ring.lock();
        // What the broker's queue dropped before this pump took it.
        r.dropped += sub.dropped() - lost;
        lost = sub.dropped();
        if r.records.len() == RING {
            r.records.pop_front();
            r.dropped += 1;
        }
        let dropped = r.dropped;
        r.records.push_back(Record {
            filter: filter.clone(),
            topic: m.topic.to_string(),
            time_us: m.timestamp,
            payload: String::from_utf8_lossy(shown).into_owned(),
            size: m.payload.len(),
            dropped,
        });
        drop(r);
        ready.notify_one();
    }
    ring.lock().open -= 1;
    ready.notify_one();
}

/// The next event; the feed ends when every subscription has.
async fn next(feed: Feed) -> Option<(Result<Event, Infallible>, Feed)> {
    let ready = feed.ready.clone();
    loop {
        let notified = ready.notified();
        let got = {
            let mut r = feed.ring.lock();
            match r.records.pop_front() {
                Some(rec) => Some(rec),
                None if r.open == 0 => return None,
                None => None,
            }
        };
        if let Some(rec) = got {
            let event = Event::default()
                .event("message")
                .json_data(&rec)
                .unwrap_or_else(|e| Event::default().event("error").data(e.to_string()));
            return Some((Ok(event), feed));
        }
        notified.await;
    }
}
