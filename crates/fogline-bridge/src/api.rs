//! The bridges' REST routes, merged into the admin API:
//!
//! - `GET /api/v1/bridges`: every bridge's status (state, counts, lag).
//! - `GET /api/v1/bridges/{name}`: one bridge's.

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use fogline_admin::ApiError;
use fogline_wire::ErrorCode;
use serde_json::{json, Value};

use crate::status::{Bridges, Snapshot};

/// The description of these routes, merged into `/api/v1/openapi.json`.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// The routes, ready to merge into the admin API.
pub fn routes(bridges: Bridges) -> Router {
    Router::new()
        .route("/api/v1/bridges", get(list))
        .route("/api/v1/bridges/{name}", get(one))
        .with_state(bridges)
}

async fn list(State(b): State<Bridges>) -> Json<Value> {
    Json(json!({ "bridges": b.snapshots() }))
}

async fn one(
    State(b): State<Bridges>,
    Path(name): Path<String>,
) -> Result<Json<Snapshot>, ApiError> {
    b.get(&name)
        .map(|s| Json(s.snapshot()))
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no bridge named {name:?}")))
}
