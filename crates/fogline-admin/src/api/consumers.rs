//! Consumers: `GET /api/v1/consumers` (`?stream=NAME` for one stream's),
//! `GET /api/v1/streams/{name}/consumers`, and one durable consumer's
//! `GET|DELETE /api/v1/streams/{name}/consumers/{consumer}` (an open one is not deleted:
//! 409).

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;

use super::blocking;
use super::error::ApiError;
use crate::state::AdminState;
use crate::views::{self, ConsumerView};

pub(super) fn routes() -> Router<AdminState> {
    Router::new()
        .route("/api/v1/consumers", get(list))
        .route("/api/v1/streams/{name}/consumers", get(of_stream))
        .route(
            "/api/v1/streams/{name}/consumers/{consumer}",
            get(describe).delete(remove),
        )
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Filter {
    stream: Option<String>,
}

async fn list(
    State(s): State<AdminState>,
    query: Result<Query<Filter>, QueryRejection>,
) -> Result<Json<Vec<ConsumerView>>, ApiError> {
    let Query(f) = query.map_err(|e| ApiError::invalid(e.body_text()))?;
    let list = s.broker.consumers(f.stream.as_deref())?;
    Ok(Json(list.iter().map(views::consumer).collect()))
}

async fn of_stream(
    State(s): State<AdminState>,
    Path(name): Path<String>,
) -> Result<Json<Vec<ConsumerView>>, ApiError> {
    let list = s.broker.consumers(Some(&name))?;
    Ok(Json(list.iter().map(views::consumer).collect()))
}

async fn describe(
    State(s): State<AdminState>,
    Path((stream, name)): Path<(String, String)>,
) -> Result<Json<ConsumerView>, ApiError> {
    Ok(Json(views::consumer(
        &s.broker.consumer_info(&stream, &name)?,
    )))
}

async fn remove(
    State(s): State<AdminState>,
    Path((stream, name)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let b = s.broker.clone();
    blocking(move || Ok(b.delete_consumer(&stream, &name)?)).await?;
    Ok(StatusCode::NO_CONTENT)
}
