//! The store's REST routes, merged into the admin API:
//!
//! - `GET /api/v1/query?stream=&profile=&since=&until=&latest_by=&limit=&after=&order=`:
//!   the records of an indexed stream whose data profile and topic match `profile` (an
//!   interest, docs/PROFILES.md: keywords, wildcards, ranges, geo, `@topic/filter`), within
//!   the time range, a page at a time (`next` is the `after` of the next page).
//! - `DELETE /api/v1/query?...`: the `delete` action, the same selection (no paging).
//! - `GET /api/v1/store`: the indexed streams and their counts.
//!
//! Times are microseconds since the epoch, RFC 3339, or a duration back from now (`10m`).

use axum::extract::{Query as Params, State};
use axum::routing::get;
use axum::{Json, Router};
use fogline_admin::ApiError;
use fogline_profile::Interest;
use fogline_wire::ErrorCode;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Store, StoreError, StoreStats};
use crate::Query;

/// The description of these routes, merged into `/api/v1/openapi.json`.
pub const OPENAPI: &str = include_str!("../../openapi.json");

/// The routes, ready to merge into the admin API.
pub fn routes(store: Store) -> Router {
    Router::new()
        .route("/api/v1/query", get(query).delete(delete))
        .route("/api/v1/store", get(stats))
        .with_state(store)
}

/// The query string.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryParams {
    /// The indexed stream; default: the only one, or `default`.
    pub stream: Option<String>,
    /// The interest profile; empty or absent: every record.
    pub profile: Option<String>,
    /// Only records at or after this time.
    pub since: Option<String>,
    /// Only records at or before this time.
    pub until: Option<String>,
    /// Latest record per distinct value of this attribute.
    pub latest_by: Option<String>,
    /// Page size.
    pub limit: Option<usize>,
    /// Paging cursor: the previous page's `next`.
    pub after: Option<u64>,
    /// `asc` (oldest first, the default) or `desc`.
    pub order: Option<String>,
}

fn error(e: StoreError) -> ApiError {
    let code = match &e {
        StoreError::NotIndexed(_) => ErrorCode::UnknownStream,
        StoreError::Invalid(_) => ErrorCode::Invalid,
        StoreError::Storage(_) => ErrorCode::StorageFailed,
    };
    ApiError::new(code, e.to_string())
}

/// A time parameter: microseconds, RFC 3339, or a duration back from now.
pub fn parse_time(s: &str, now_us: u64) -> Result<u64, String> {
    if let Ok(us) = s.parse::<u64>() {
        return Ok(us);
    }
    if let Ok(d) = humantime::parse_duration(s) {
        return Ok(now_us.saturating_sub(d.as_micros() as u64));
    }
    let t = humantime::parse_rfc3339_weak(s).map_err(|_| {
        format!("{s:?} is not a time (microseconds, RFC 3339, or a duration such as 10m)")
    })?;
    t.duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .map_err(|_| format!("{s:?} is before 1970"))
}

/// The stream and query a request names.
pub fn to_query(store: &Store, p: &QueryParams) -> Result<(String, Query), StoreError> {
    let interest = match p.profile.as_deref() {
        Some(text) => {
            Interest::parse(text).map_err(|e| StoreError::Invalid(format!("profile: {e}")))?
        }
        None => Interest::default(),
    };
    let now = fogline_broker::now_micros();
    let time = |v: &Option<String>, what: &str| {
        v.as_deref()
            .map(|s| parse_time(s, now).map_err(|e| StoreError::Invalid(format!("{what}: {e}"))))
            .transpose()
    };
    let newest_first = match p.order.as_deref() {
        None | Some("asc") => false,
        Some("desc") => true,
        Some(o) => {
            return Err(StoreError::Invalid(format!(
                "order: {o:?} is not asc or desc"
            )))
        }
    };
    let stream = match &p.stream {
        Some(s) => s.clone(),
        None if store.streams.len() == 1 => {
            store.streams.keys().next().cloned().unwrap_or_default()
        }
        None => "default".to_string(),
    };
    let mut q = Query::new(interest);
    q.since_us = time(&p.since, "since")?;
    q.until_us = time(&p.until, "until")?;
    q.latest_by = p.latest_by.clone().filter(|a| !a.is_empty());
    q.limit = p.limit.unwrap_or(100);
    q.after = p.after;
    q.newest_first = newest_first;
    Ok((stream, q))
}

async fn query(
    State(store): State<Store>,
    Params(p): Params<QueryParams>,
) -> Result<Json<Value>, ApiError> {
    let (stream, q) = to_query(&store, &p).map_err(error)?;
    let page = store.query(&stream, q).await.map_err(error)?;
    let records: Vec<Value> = page
        .records
        .iter()
        .map(|r| {
            let mut v = json!({
                "offset": r.offset,
                "timestamp": r.timestamp,
                "topic": r.topic,
                "profile": r.profile.to_string(),
            });
            match std::str::from_utf8(&r.payload) {
                Ok(text) => v["payload"] = json!(text),
                Err(_) => {
                    use base64::Engine;
                    v["payload_base64"] =
                        json!(base64::engine::general_purpose::STANDARD.encode(&r.payload));
                }
            }
            v
        })
        .collect();
    Ok(Json(json!({
        "stream": stream,
        "records": records,
        "next": page.next,
    })))
}

async fn delete(
    State(store): State<Store>,
    Params(p): Params<QueryParams>,
) -> Result<Json<Value>, ApiError> {
    let (stream, q) = to_query(&store, &p).map_err(error)?;
    let n = store.delete(&stream, &q).await.map_err(error)?;
    Ok(Json(json!({ "stream": stream, "deleted": n })))
}

async fn stats(State(store): State<Store>) -> Json<Vec<StoreStats>> {
    Json(store.stats())
}
