//! `/api/v1/streams`: list, create, describe, change, purge, delete.
//!
//! A stream to create (`POST`): `{"name", "subjects": [...], "storage"?: "memory" | "mmap" |
//! "fsync", "retention_bytes"?, "retention_age_seconds"?, "segment_bytes"?}`; an absent
//! setting takes the node's default, a retention of 0 means no limit. Or, as eKuiper takes
//! it, `{"sql": "CREATE STREAM demo (...) WITH (DATASOURCE=\"a/+/b\", FORMAT=\"json\")"}`
//! (with the same optional settings): the stream is named by the statement, captures its
//! `DATASOURCE` (the stream's name when absent) and keeps the statement as its schema. A change (`PATCH`):
//! any of `subjects`, `retention_bytes`, `retention_age_seconds` (`null`: back to the node's
//! default), and `storage` only to state the one it has (a stream's storage cannot change).

use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use bytesize::ByteSize;
use fogline_broker::{StorageMode, StreamChange, StreamConfig};
use serde::Deserialize;

use super::error::ApiError;
use super::{blocking, json_body};
use crate::state::AdminState;
use crate::views::{self, StreamView};

pub(super) fn routes() -> Router<AdminState> {
    Router::new()
        .route("/api/v1/streams", get(list).post(create))
        .route(
            "/api/v1/streams/{name}",
            get(describe).patch(change).delete(remove),
        )
        .route("/api/v1/streams/{name}/purge", post(purge))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewStream {
    #[serde(default)]
    name: String,
    #[serde(default)]
    subjects: Vec<String>,
    sql: Option<String>,
    storage: Option<StorageMode>,
    retention_bytes: Option<u64>,
    retention_age_seconds: Option<f64>,
    segment_bytes: Option<u64>,
}

async fn list(State(s): State<AdminState>) -> Json<Vec<StreamView>> {
    Json(views::streams(&s.broker))
}

async fn describe(
    State(s): State<AdminState>,
    Path(name): Path<String>,
) -> Result<Json<StreamView>, ApiError> {
    let stream = s
        .broker
        .stream(&name)
        .ok_or(fogline_broker::BrokerError::UnknownStream(name))?;
    Ok(Json(views::stream(&stream)))
}

async fn create(State(s): State<AdminState>, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    let mut n: NewStream = json_body(&body)?;
    if let Some(sql) = &n.sql {
        let def = match fogline_sql::parse(sql) {
            Ok(fogline_sql::ast::Statement::CreateStream(def)) => def,
            Ok(_) => return Err(ApiError::invalid("sql must be a CREATE STREAM statement")),
            Err(e) => return Err(ApiError::invalid(format!("sql: {e}"))),
        };
        if !n.name.is_empty() && n.name != def.name {
            return Err(ApiError::invalid(format!(
                "name {:?} differs from the statement's {:?}",
                n.name, def.name
            )));
        }
        if !n.subjects.is_empty() {
            return Err(ApiError::invalid(
                "subjects come from the statement's DATASOURCE; give one or the other",
            ));
        }
        n.subjects = vec![def.options.datasource.clone().unwrap_or(def.name.clone())];
        n.name = def.name;
    } else if n.name.is_empty() {
        return Err(ApiError::invalid(
            "a stream needs a name (or a CREATE STREAM sql)",
        ));
    }
    if n.segment_bytes == Some(0) {
        return Err(ApiError::invalid("segment_bytes must not be 0"));
    }
    let cfg = StreamConfig {
        name: n.name,
        subjects: n.subjects,
        storage: n.storage,
        retention_bytes: n.retention_bytes.map(ByteSize::b),
        retention_age: n.retention_age_seconds.map(seconds).transpose()?,
        segment_bytes: n.segment_bytes.map(ByteSize::b),
        sql: n.sql,
    };
    let b = s.broker.clone();
    let stream = blocking(move || Ok(b.create_stream(cfg)?)).await?;
    Ok((StatusCode::CREATED, Json(views::stream(&stream))))
}

async fn change(
    State(s): State<AdminState>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<StreamView>, ApiError> {
    let fields: serde_json::Map<String, serde_json::Value> = json_body(&body)?;
    let mut c = StreamChange::default();
    for (key, v) in fields {
        match key.as_str() {
            "subjects" => {
                c.subjects = Some(
                    serde_json::from_value(v)
                        .map_err(|e| ApiError::invalid(format!("subjects: {e}")))?,
                );
            }
            "retention_bytes" => {
                c.retention_bytes = Some(nullable(&key, v)?.map(ByteSize::b));
            }
            "retention_age_seconds" => {
                let secs: Option<f64> = serde_json::from_value(v)
                    .map_err(|e| ApiError::invalid(format!("{key}: {e}")))?;
                c.retention_age = Some(secs.map(seconds).transpose()?);
            }
            "storage" => {
                c.storage = Some(
                    serde_json::from_value(v)
                        .map_err(|e| ApiError::invalid(format!("storage: {e}")))?,
                );
            }
            other => {
                return Err(ApiError::invalid(format!(
                    "unknown field {other:?}: a stream's subjects, retention_bytes and \
                     retention_age_seconds can change"
                )))
            }
        }
    }
    let b = s.broker.clone();
    let stream = blocking(move || Ok(b.update_stream(&name, c)?)).await?;
    Ok(Json(views::stream(&stream)))
}

async fn purge(
    State(s): State<AdminState>,
    Path(name): Path<String>,
) -> Result<Json<StreamView>, ApiError> {
    let b = s.broker.clone();
    let stream = blocking(move || Ok(b.purge_stream(&name)?)).await?;
    Ok(Json(views::stream(&stream)))
}

async fn remove(
    State(s): State<AdminState>,
    Path(name): Path<String>,
) -> Result<StatusCode, ApiError> {
    let b = s.broker.clone();
    blocking(move || Ok(b.delete_stream(&name)?)).await?;
    Ok(StatusCode::NO_CONTENT)
}

fn nullable(key: &str, v: serde_json::Value) -> Result<Option<u64>, ApiError> {
    serde_json::from_value(v).map_err(|e| ApiError::invalid(format!("{key}: {e}")))
}

fn seconds(s: f64) -> Result<Duration, ApiError> {
    Duration::try_from_secs_f64(s)
        .map_err(|_| ApiError::invalid(format!("{s} is not a number of seconds")))
}
