//! The rules' REST routes, in eKuiper's shapes, merged into the admin API:
//!
//! - `GET /api/v1/rules`: `[{"id", "status", ...}]`; `POST /api/v1/rules`: create (201).
//! - `POST /api/v1/rules/validate`: check without creating.
//! - `GET|PUT|DELETE /api/v1/rules/{id}`; `POST /api/v1/rules/{id}/start|stop|restart`.
//! - `GET /api/v1/rules/{id}/status`: eKuiper's flat counters (`source_<stream>_0_...`,
//!   `op_<n>_<operator>_0_...`, `sink_<kind>_<n>_...`) and fogline's own.
//! - `GET|POST /api/v1/patterns`, `GET|PUT|DELETE /api/v1/patterns/{name}`: pattern sets.

use std::sync::atomic::Ordering;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use fogline_admin::ApiError;
use fogline_wire::ErrorCode;
use serde_json::{json, Map, Value as Json_};

use crate::engine::{RuleError, Rules};
use crate::patterns::PatternSet;
use crate::spec::RuleSpec;

/// The description of these routes (OpenAPI paths and schemas), merged into the admin API's
/// `/api/v1/openapi.json`; `tests/openapi.rs` keeps it equal to the routes.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// The routes, ready to merge into the admin API.
pub fn routes(rules: Rules) -> Router {
    Router::new()
        .route("/api/v1/rules", get(list).post(create))
        .route("/api/v1/rules/validate", post(validate))
        .route(
            "/api/v1/rules/{id}",
            get(describe).put(replace).delete(remove),
        )
        .route("/api/v1/rules/{id}/status", get(status))
        .route("/api/v1/rules/{id}/start", post(start))
        .route("/api/v1/rules/{id}/stop", post(stop))
        .route("/api/v1/rules/{id}/restart", post(restart))
        .route("/api/v1/patterns", get(patterns).post(put_pattern))
        .route(
            "/api/v1/patterns/{name}",
            get(pattern).put(replace_pattern).delete(remove_pattern),
        )
        .with_state(rules)
}

fn error(e: RuleError) -> ApiError {
    let code = match &e {
        RuleError::Unknown(_) => ErrorCode::NotFound,
        RuleError::Exists(_) => ErrorCode::Duplicate,
        RuleError::Invalid(_) => ErrorCode::Invalid,
        RuleError::Storage(_) => ErrorCode::StorageFailed,
        RuleError::TooMany(_) => ErrorCode::TooMany,
    };
    ApiError::new(code, e.to_string())
}

fn spec(body: &[u8]) -> Result<RuleSpec, ApiError> {
    RuleSpec::from_json(body).map_err(ApiError::invalid)
}

fn done(message: String) -> Json<Json_> {
    Json(json!({ "message": message }))
}

async fn list(State(r): State<Rules>) -> Json<Json_> {
    let rows: Vec<Json_> = r
        .list()
        .into_iter()
        .map(|s| {
            json!({
                "id": s.id,
                "status": s.state,
                "reason": s.reason,
                "restarts": s.restarts,
            })
        })
        .collect();
    Json(Json_::Array(rows))
}

async fn create(State(r): State<Rules>, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    let s = spec(&body)?;
    let id = s.id.clone();
    r.create(s).map_err(error)?;
    Ok((
        StatusCode::CREATED,
        done(format!("Rule {id} was created successfully.")),
    ))
}

async fn validate(State(r): State<Rules>, body: Bytes) -> Result<Json<Json_>, ApiError> {
    let s = spec(&body)?;
    r.validate(&s).map_err(error)?;
    Ok(Json(
        json!({ "valid": true, "message": "The rule is valid." }),
    ))
}

async fn describe(
    State(r): State<Rules>,
    Path(id): Path<String>,
) -> Result<Json<RuleSpec>, ApiError> {
    r.get(&id)
        .map(Json)
        .ok_or_else(|| error(RuleError::Unknown(id)))
}

async fn replace(
    State(r): State<Rules>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Json<Json_>, ApiError> {
    let s = spec(&body)?;
    if s.id != id {
        return Err(ApiError::invalid(format!(
            "the body's id {:?} is not the path's {id:?}",
            s.id
        )));
    }
    r.update(s).await.map_err(error)?;
    Ok(done(format!("Rule {id} was updated successfully.")))
}

async fn remove(State(r): State<Rules>, Path(id): Path<String>) -> Result<Json<Json_>, ApiError> {
    r.delete(&id).await.map_err(error)?;
    Ok(done(format!("Rule {id} is dropped.")))
}

async fn start(State(r): State<Rules>, Path(id): Path<String>) -> Result<Json<Json_>, ApiError> {
    r.start(&id).map_err(error)?;
    Ok(done(format!("Rule {id} was started")))
}

async fn stop(State(r): State<Rules>, Path(id): Path<String>) -> Result<Json<Json_>, ApiError> {
    r.stop(&id).await.map_err(error)?;
    Ok(done(format!("Rule {id} was stopped.")))
}

async fn restart(State(r): State<Rules>, Path(id): Path<String>) -> Result<Json<Json_>, ApiError> {
    r.stop(&id).await.map_err(error)?;
    r.start(&id).map_err(error)?;
    Ok(done(format!("Rule {id} was restarted")))
}

async fn status(State(r): State<Rules>, Path(id): Path<String>) -> Result<Json<Json_>, ApiError> {
    let (st, stats) = r
        .status(&id)
        .ok_or_else(|| error(RuleError::Unknown(id.clone())))?;
    let spec = r
        .get(&id)
        .ok_or_else(|| error(RuleError::Unknown(id.clone())))?;
    let mut m = Map::new();
    let n = |a: &std::sync::atomic::AtomicU64| Json_::from(a.load(Ordering::Relaxed));
    m.insert("status".into(), json!(st.state));
    if let Some(reason) = &st.reason {
        m.insert("message".into(), json!(reason));
    }
    m.insert("restarts".into(), json!(st.restarts));
    m.insert("lastStartTimestamp".into(), json!(st.started_us / 1000));
    let source = crate::engine::from_stream(&spec.sql).unwrap_or_else(|| "unknown".into());
    m.insert(
        format!("source_{source}_0_records_in_total"),
        n(&stats.records_in),
    );
    m.insert(
        format!("source_{source}_0_exceptions_total"),
        n(&stats.exceptions),
    );
    for (i, op) in stats.operators.lock().iter().enumerate() {
        let p = format!("op_{}_{}_0_", i + 1, op.name);
        m.insert(format!("{p}records_in_total"), json!(op.records_in));
        m.insert(format!("{p}records_out_total"), json!(op.records_out));
        m.insert(format!("{p}exceptions_total"), json!(op.exceptions));
        let avg = op.process_ns / op.records_in.max(1) / 1000;
        m.insert(format!("{p}process_latency_us"), json!(avg));
        if let Some(e) = &op.last_exception {
            m.insert(format!("{p}last_exception"), json!(e));
        }
    }
    for (i, (kind, s)) in stats.sinks.lock().iter().enumerate() {
        let p = format!("sink_{kind}_{i}_");
        m.insert(format!("{p}records_in_total"), n(&s.records_in));
        m.insert(format!("{p}records_out_total"), n(&s.records_out));
        m.insert(format!("{p}exceptions_total"), n(&s.exceptions));
        m.insert(format!("{p}dropped_total"), n(&s.dropped));
        let out = s.records_out.load(Ordering::Relaxed).max(1);
        m.insert(
            format!("{p}process_latency_us"),
            json!(s.process_ns.load(Ordering::Relaxed) / out / 1000),
        );
        m.insert(
            format!("{p}last_invocation"),
            json!(s.last_output_us.load(Ordering::Relaxed) / 1000),
        );
        if let Some(e) = &*s.last_exception.lock() {
            m.insert(format!("{p}last_exception"), json!(e));
        }
    }
    m.insert("results_total".into(), n(&stats.results));
    m.insert("replayed_results_total".into(), n(&stats.replayed_results));
    m.insert("checkpoints_total".into(), n(&stats.checkpoints));
    m.insert("triggers_fired_total".into(), n(&stats.triggers_fired));
    m.insert(
        "lastOutputTimestamp".into(),
        json!(stats.last_result_us.load(Ordering::Relaxed) / 1000),
    );
    if let Some(e) = &*stats.last_exception.lock() {
        m.insert("last_exception".into(), json!(e));
    }
    Ok(Json(Json_::Object(m)))
}

async fn patterns(State(r): State<Rules>) -> Json<Json_> {
    let rows: Vec<Json_> = r
        .patterns()
        .list()
        .into_iter()
        .map(|(name, n)| json!({ "name": name, "patterns": n }))
        .collect();
    Json(Json_::Array(rows))
}

fn pattern_set(body: &[u8]) -> Result<PatternSet, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::invalid(e.to_string()))
}

async fn put_pattern(State(r): State<Rules>, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    let set = pattern_set(&body)?;
    let name = set.name.clone();
    r.patterns().put(set).map_err(ApiError::invalid)?;
    Ok((
        StatusCode::CREATED,
        done(format!("Pattern set {name} was stored.")),
    ))
}

async fn replace_pattern(
    State(r): State<Rules>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Json_>, ApiError> {
    let set = pattern_set(&body)?;
    if set.name != name {
        return Err(ApiError::invalid(format!(
            "the body's name {:?} is not the path's {name:?}",
            set.name
        )));
    }
    r.patterns().put(set).map_err(ApiError::invalid)?;
    Ok(done(format!("Pattern set {name} was stored.")))
}

async fn pattern(
    State(r): State<Rules>,
    Path(name): Path<String>,
) -> Result<Json<PatternSet>, ApiError> {
    r.patterns()
        .get(&name)
        .map(Json)
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, format!("no pattern set {name:?}")))
}

async fn remove_pattern(
    State(r): State<Rules>,
    Path(name): Path<String>,
) -> Result<Json<Json_>, ApiError> {
    match r.patterns().delete(&name) {
        Ok(true) => Ok(done(format!("Pattern set {name} is dropped."))),
        Ok(false) => Err(ApiError::new(
            ErrorCode::NotFound,
            format!("no pattern set {name:?}"),
        )),
        Err(e) => Err(ApiError::new(ErrorCode::StorageFailed, e)),
    }
}
