//! The routes of the admin API (`openapi.json` describes them; a test keeps the two equal).
//!
//! - `GET /healthz`: 200 when every component runs, else 503, with each one's state; status
//!   `degraded` (still 200) with `warnings` while a stream's disk is full or a bridge holds
//!   its retention past the margin.
//! - `GET /api/v1/node`: version, uptime, storage, memory, data directory, components.
//! - `/api/v1/streams` (`streams`): list, create, describe, change, purge, delete.
//! - `/api/v1/consumers`, `/api/v1/streams/{name}/consumers[/{consumer}]` (`consumers`).
//! - `GET /api/v1/connections`, `GET /api/v1/subscriptions`.
//! - `GET /api/v1/events`: the live feed (Server-Sent Events, see `events`).
//! - `GET /api/v1/subscribe?filter=...`: live records on topics (Server-Sent Events, `subscribe`).
//! - `GET /metrics`: Prometheus/OpenMetrics text. `GET /`: the dashboard.
//!
//! Changes run on a blocking thread (they write the node's catalog and files).

mod consumers;
pub mod error;
mod streams;
mod subscribe;

use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use fogline_wire::ErrorCode;

use crate::state::AdminState;
use error::ApiError;

/// The description of the API, kept true by a test (`tests/openapi.rs`).
pub const OPENAPI: &str = include_str!("../../openapi.json");

const DASHBOARD_HTML: &str = include_str!("../../assets/index.html");
const DASHBOARD_JS: &str = include_str!("../../assets/dashboard.js");
const DASHBOARD_CSS: &str = include_str!("../../assets/dashboard.css");
const RULES_JS: &str = include_str!("../../assets/rules.js");
const BRIDGES_JS: &str = include_str!("../../assets/bridges.js");

/// The API's description with other components' merged in: their `paths` and
/// `components.schemas` added to the admin API's own.
///
/// # Panics
/// A description that is not a JSON object (see [`crate::ExtraRoutes`]).
pub fn merged_openapi(extra: &[&str]) -> std::sync::Arc<str> {
    if extra.is_empty() {
        return std::sync::Arc::from(OPENAPI);
    }
    let mut doc: serde_json::Value = serde_json::from_str(OPENAPI).expect("openapi.json is JSON");
    for text in extra {
        let part: serde_json::Value =
            serde_json::from_str(text).expect("a component's OpenAPI description is JSON");
        for section in [&["paths"][..], &["components", "schemas"][..]] {
            let Some(from) = section.iter().try_fold(&part, |v, k| v.get(*k)) else {
                continue;
            };
            let into = section.iter().fold(&mut doc, |v, k| &mut v[*k]);
            if let (Some(into), Some(from)) = (into.as_object_mut(), from.as_object()) {
                into.extend(from.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
    }
    std::sync::Arc::from(doc.to_string())
}

/// Every route of the admin API; `openapi` is the description it serves.
pub fn router(state: AdminState, openapi: std::sync::Arc<str>) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { page(DASHBOARD_HTML, "text/html; charset=utf-8") }),
        )
        .route(
            "/assets/dashboard.js",
            get(|| async { page(DASHBOARD_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/assets/rules.js",
            get(|| async { page(RULES_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/assets/bridges.js",
            get(|| async { page(BRIDGES_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/assets/dashboard.css",
            get(|| async { page(DASHBOARD_CSS, "text/css; charset=utf-8") }),
        )
        .route("/healthz", get(healthz))
        .route("/metrics", get(metrics))
        .route(
            "/api/v1/openapi.json",
            get(move || async move {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    openapi.to_string(),
                )
                    .into_response()
            }),
        )
        .route("/api/v1/node", get(node))
        .route("/api/v1/events", get(crate::events::events))
        .route("/api/v1/connections", get(connections))
        .route("/api/v1/subscriptions", get(subscriptions))
        .route("/api/v1/producers", get(producers))
        .merge(streams::routes())
        .merge(consumers::routes())
        .merge(subscribe::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(not_allowed)
        .with_state(state)
}

fn page(body: &'static str, content_type: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::new(
        ErrorCode::NotFound,
        format!(
            "{} is not a path of the admin API (see /api/v1/openapi.json)",
            uri.path()
        ),
    )
}

async fn not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError {
        status: StatusCode::METHOD_NOT_ALLOWED,
        code: ErrorCode::NotFound,
        message: format!("{method} is not served on {}", uri.path()),
    }
}

async fn healthz(State(s): State<AdminState>) -> Response {
    let components = s.components.components();
    let ok = components.iter().all(|c| c.state.is_healthy());
    // Conditions that leave the node serving, but not all of it: still 200.
    let warnings: Vec<String> = s
        .broker
        .streams()
        .iter()
        .flat_map(|st| {
            let full = st.storage_full().then(|| {
                format!(
                    "stream {}: disk full, records are refused until there is room (reads go on)",
                    st.name()
                )
            });
            let held = st.hold_full().then(|| {
                format!(
                    "stream {}: retention held by a bridge past its margin, records are refused until it catches up",
                    st.name()
                )
            });
            full.into_iter().chain(held)
        })
        .collect();
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let word = match (ok, warnings.is_empty()) {
        (false, _) => "unavailable",
        (true, false) => "degraded",
        (true, true) => "ok",
    };
    let body = serde_json::json!({
        "status": word,
        "components": components,
        "warnings": warnings,
    });
    (status, Json(body)).into_response()
}

/// OpenMetrics for a scraper that asks for it (Prometheus does), the classic text format
/// for anyone else (see [`crate::metrics::to_classic`]).
async fn metrics(State(s): State<AdminState>, headers: HeaderMap) -> Response {
    let body = crate::metrics::render(&s.registry.lock());
    let openmetrics = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"));
    if openmetrics {
        let kind = "application/openmetrics-text; version=1.0.0; charset=utf-8";
        ([(header::CONTENT_TYPE, kind)], body).into_response()
    } else {
        let kind = "text/plain; version=0.0.4; charset=utf-8";
        let classic = crate::metrics::to_classic(&body);
        ([(header::CONTENT_TYPE, kind)], classic).into_response()
    }
}

async fn node(State(s): State<AdminState>) -> Result<Json<crate::views::NodeView>, ApiError> {
    // Measuring the data directory walks it: off the runtime threads.
    let view = blocking(move || Ok(crate::views::node(&s))).await?;
    Ok(Json(view))
}

async fn connections(State(s): State<AdminState>) -> Json<Vec<crate::views::ConnectionView>> {
    Json(crate::views::connections(&s.broker))
}

async fn subscriptions(State(s): State<AdminState>) -> Json<Vec<crate::views::SubscriptionView>> {
    Json(crate::views::subscriptions(&s.broker))
}

async fn producers(State(s): State<AdminState>) -> Json<Vec<crate::views::ProducerView>> {
    Json(crate::views::producers(&s.broker))
}

/// Runs `f` on a blocking thread.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, format!("request failed: {e}")))?
}

/// Reads a JSON body, refusing what is not an object of known fields with `Invalid`.
fn json_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::invalid(format!("request body: {e}")))
}
