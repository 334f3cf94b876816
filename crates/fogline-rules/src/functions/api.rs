//! The functions' REST routes, in eKuiper's shapes, merged into the admin API:
//!
//! - `GET /api/v1/functions`: `[{"name", "profile", "kind", "module_bytes", "running",
//!   "instances": [id...]}]`, the stored functions.
//! - `POST /api/v1/functions`: store a new one (201; 409 if the name is taken);
//!   `PUT /api/v1/functions/{name}`: store or replace (running instances keep the version
//!   they started with). The body is a [`FunctionSpec`]'s JSON plus, for wasm, the module
//!   in base64 in `"module"`:
//!   `{"name": "up", "profile": {"stage": "clean"}, "kind": {"type": "process",
//!   "command": "/bin/sh", "args": ["-c", "..."]}}` or
//!   `{"name": "up", "kind": {"type": "wasm", "fuel_per_record": 1000000}, "module": "AGFzbQ..."}`.
//! - `GET /api/v1/functions/{name}`: the spec (no module bytes) and its instances.
//! - `DELETE /api/v1/functions/{name}`: refused (409) while instances run, unless
//!   `?force=true`, which stops them.
//! - `POST /api/v1/functions/{name}/start` with `{"source": "<filter>", "output": "<topic>"}`:
//!   `{"message", "started", "instance"}`; `started` is false when it already ran there.
//! - `POST /api/v1/functions/{name}/stop`: stops all its instances.
//! - `GET /api/v1/functions/instances`: every instance, running or recently ended, with its
//!   state and counters. `instances` is therefore not a function name here.
//!
//! On a node without functions (it keeps no files) every route answers 501 saying why.

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use fogline_admin::ApiError;
use fogline_functions::{FunctionError, FunctionKind, FunctionSpec, InstanceInfo, InstanceState};
use fogline_wire::ErrorCode;
use serde::Deserialize;
use serde_json::{json, Value as Json_};

use super::FunctionService;

/// Either the service or why this node has none.
type Svc = Result<FunctionService, String>;

/// The description of these routes (OpenAPI paths), merged into the admin API's
/// `/api/v1/openapi.json`; `tests/openapi.rs` keeps it equal to the routes.
pub const OPENAPI: &str = include_str!("openapi.json");

/// The routes, ready to merge into the admin API. `Err(why)`: functions are off on this
/// node, and every route says why.
pub fn routes(service: Result<FunctionService, String>) -> Router {
    Router::new()
        .route("/api/v1/functions", get(list).post(create))
        .route("/api/v1/functions/instances", get(instances))
        .route(
            "/api/v1/functions/{name}",
            get(describe).put(replace).delete(remove),
        )
        .route("/api/v1/functions/{name}/start", post(start))
        .route("/api/v1/functions/{name}/stop", post(stop))
        .with_state(service)
}

fn svc(s: &Svc) -> Result<&FunctionService, ApiError> {
    s.as_ref().map_err(|why| ApiError {
        status: StatusCode::NOT_IMPLEMENTED,
        code: ErrorCode::Invalid,
        message: format!("functions are off on this node: {why}"),
    })
}

fn error(e: FunctionError) -> ApiError {
    let message = e.to_string();
    let code = match e {
        FunctionError::InvalidName(_) => ErrorCode::InvalidName,
        FunctionError::NotFound(_) | FunctionError::NoInstance(_) => ErrorCode::NotFound,
        FunctionError::Running { .. } => {
            return ApiError {
                status: StatusCode::CONFLICT,
                code: ErrorCode::Invalid,
                message,
            }
        }
        FunctionError::Io { .. } | FunctionError::Corrupt { .. } => ErrorCode::StorageFailed,
        FunctionError::Broker { source, .. } => ApiError::from(source).code,
        _ => ErrorCode::Invalid,
    };
    ApiError::new(code, message)
}

fn done(message: String) -> Json<Json_> {
    Json(json!({ "message": message }))
}

/// An instance as the API shows it; times in milliseconds since the UNIX epoch.
pub fn instance_json(i: &InstanceInfo) -> Json_ {
    let (state, reason) = match &i.state {
        InstanceState::Running => ("running", None),
        InstanceState::Stopped => ("stopped", None),
        InstanceState::Failed { reason } => ("failed", Some(reason)),
    };
    json!({
        "id": i.id, "function": i.function, "kind": i.kind,
        "source": i.source, "output": i.output,
        "state": state, "reason": reason, "started_at": i.started_at / 1000,
        "records_in": i.records_in, "records_out": i.records_out,
        "failures": i.failures, "restarts": i.restarts, "dropped": i.dropped,
        "last_failure": i.last_failure, "pid": i.pid,
    })
}

async fn list(State(s): State<Svc>) -> Result<Json<Json_>, ApiError> {
    let s = svc(&s)?;
    let instances = s.instances(None);
    let rows = s.store().list().into_iter().map(|f| {
        let ids: Vec<u64> = instances
            .iter()
            .filter(|i| i.function == f.spec.name && i.state == InstanceState::Running)
            .map(|i| i.id)
            .collect();
        json!({
            "name": f.spec.name, "profile": f.spec.profile, "kind": f.spec.kind_name(),
            "module_bytes": f.module_bytes, "running": f.running, "instances": ids,
        })
    });
    Ok(Json(Json_::Array(rows.collect())))
}

/// A function to store: the spec, and a wasm module in base64.
#[derive(Deserialize)]
struct Upload {
    #[serde(flatten)]
    spec: Json_,
    #[serde(default)]
    module: Option<String>,
}

fn upload(body: &[u8]) -> Result<FunctionSpec, ApiError> {
    let up: Upload = serde_json::from_slice(body).map_err(|e| ApiError::invalid(e.to_string()))?;
    let mut spec: FunctionSpec =
        serde_json::from_value(up.spec).map_err(|e| ApiError::invalid(e.to_string()))?;
    match (&mut spec.kind, up.module) {
        (FunctionKind::Wasm(w), Some(m)) => {
            w.module = base64::engine::general_purpose::STANDARD
                .decode(m.trim())
                .map_err(|e| ApiError::invalid(format!("module: not base64: {e}")))?;
        }
        (FunctionKind::Wasm(_), None) => {
            return Err(ApiError::invalid(
                "a wasm function needs its module in base64 in \"module\"",
            ))
        }
        (FunctionKind::Process(_), Some(_)) => {
            return Err(ApiError::invalid("a process function takes no \"module\""))
        }
        (FunctionKind::Process(_), None) => {}
    }
    if spec.name == "instances" {
        return Err(ApiError::new(
            ErrorCode::InvalidName,
            "\"instances\" is reserved (GET /api/v1/functions/instances)",
        ));
    }
    spec.validate().map_err(error)?;
    Ok(spec)
}

/// Stores off the runtime: the store writes and syncs files.
async fn put(s: &FunctionService, spec: FunctionSpec) -> Result<(), ApiError> {
    let store = s.store().clone();
    tokio::task::spawn_blocking(move || store.store(&spec))
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?
        .map_err(error)
}

async fn create(State(s): State<Svc>, body: Bytes) -> Result<impl IntoResponse, ApiError> {
    let s = svc(&s)?;
    let spec = upload(&body)?;
    let name = spec.name.clone();
    if s.store().list().iter().any(|f| f.spec.name == name) {
        let taken = format!("function {name} exists; PUT /api/v1/functions/{name} replaces it");
        return Err(ApiError::new(ErrorCode::Duplicate, taken));
    }
    put(s, spec).await?;
    let msg = format!("Function {name} was stored.");
    Ok((StatusCode::CREATED, done(msg)))
}

async fn replace(
    State(s): State<Svc>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Json_>, ApiError> {
    let s = svc(&s)?;
    let spec = upload(&body)?;
    if spec.name != name {
        let msg = format!("the body's name {:?} is not the path's {name:?}", spec.name);
        return Err(ApiError::invalid(msg));
    }
    put(s, spec).await?;
    Ok(done(format!("Function {name} was stored.")))
}

async fn describe(State(s): State<Svc>, Path(name): Path<String>) -> Result<Json<Json_>, ApiError> {
    let s = svc(&s)?;
    let f = s.store().list().into_iter().find(|f| f.spec.name == name);
    let f = f.ok_or_else(|| error(FunctionError::NotFound(name.clone())))?;
    let mut v = serde_json::to_value(&f.spec).map_err(|e| ApiError::invalid(e.to_string()))?;
    if let Some(bytes) = f.module_bytes {
        v["kind"]["module_bytes"] = json!(bytes);
    }
    let instances: Vec<Json_> = s.instances(Some(&name)).iter().map(instance_json).collect();
    v["running"] = json!(f.running);
    v["instances"] = Json_::Array(instances);
    Ok(Json(v))
}

#[derive(Deserialize)]
struct Force {
    #[serde(default)]
    force: bool,
}

async fn remove(
    State(s): State<Svc>,
    Path(name): Path<String>,
    Query(q): Query<Force>,
) -> Result<Json<Json_>, ApiError> {
    let s = svc(&s)?;
    let store = s.store().clone();
    let who = name.clone();
    tokio::task::spawn_blocking(move || store.delete(&who, q.force))
        .await
        .map_err(|e| ApiError::new(ErrorCode::Internal, e.to_string()))?
        .map_err(error)?;
    Ok(done(format!("Function {name} is dropped.")))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartBody {
    source: String,
    output: String,
}

async fn start(
    State(s): State<Svc>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Json_>, ApiError> {
    let s = svc(&s)?;
    let b: StartBody =
        serde_json::from_slice(&body).map_err(|e| ApiError::invalid(e.to_string()))?;
    let (info, started) = s.start(&name, &b.source, &b.output).await.map_err(error)?;
    let message = match started {
        true => format!("Function {name} was started as instance {}.", info.id),
        false => format!(
            "Function {name} already runs there as instance {}.",
            info.id
        ),
    };
    let instance = instance_json(&info);
    Ok(Json(
        json!({ "message": message, "started": started, "instance": instance }),
    ))
}

async fn stop(State(s): State<Svc>, Path(name): Path<String>) -> Result<Json<Json_>, ApiError> {
    let s = svc(&s)?;
    let stopped = s.stop(&name).await.map_err(error)?;
    let ids: Vec<u64> = stopped.iter().map(|i| i.id).collect();
    let message = format!("Function {name}: {} instance(s) stopped.", ids.len());
    Ok(Json(json!({ "message": message, "stopped": ids })))
}

async fn instances(State(s): State<Svc>) -> Result<Json<Json_>, ApiError> {
    let s = svc(&s)?;
    let rows = s.instances(None).iter().map(instance_json).collect();
    Ok(Json(Json_::Array(rows)))
}
