//! `openapi.json` is kept true: every documented path answers its documented methods (and
//! 405 to the others), every route in the sources is documented, and every JSON answer
//! (success and error) validates against the documented schema, with no field left out of
//! the description (`additionalProperties: false`) and none missing (`required`).

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{running, Admin};
use fogline_broker::{ConsumerOptions, Start, StorageMode};
use serde_json::Value;

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

fn spec() -> Value {
    serde_json::from_str(fogline_admin::OPENAPI).expect("openapi.json is JSON")
}

/// Validates `v` against `schema` (the subset openapi.json uses); returns what is wrong.
fn check(spec: &Value, schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/components/schemas/");
        let target = &spec["components"]["schemas"][name];
        assert!(target.is_object(), "dangling $ref {r}");
        return check(spec, target, v, at, errors);
    }
    if v.is_null() {
        if schema.get("nullable") != Some(&Value::Bool(true)) {
            errors.push(format!("{at}: null where the schema does not allow it"));
        }
        return;
    }
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    let ok = match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "" => true,
        other => panic!("{at}: schema type {other} not handled"),
    };
    if !ok {
        errors.push(format!("{at}: {v} is not {ty}"));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(v) {
            errors.push(format!("{at}: {v} is not one of {allowed:?}"));
        }
    }
    if let (Some(min), Some(n)) = (schema.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if n < min {
            errors.push(format!("{at}: {n} is below {min}"));
        }
    }
    if let Some(items) = schema.get("items") {
        for (i, item) in v.as_array().into_iter().flatten().enumerate() {
            check(spec, items, item, &format!("{at}[{i}]"), errors);
        }
    }
    if ty == "object" {
        let props = schema.get("properties").and_then(Value::as_object);
        let obj = v.as_object().unwrap();
        for req in schema["required"].as_array().into_iter().flatten() {
            let key = req.as_str().unwrap();
            if !obj.contains_key(key) {
                errors.push(format!("{at}: required field {key} is missing"));
            }
        }
        for (k, val) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(s) => check(spec, s, val, &format!("{at}.{k}"), errors),
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    errors.push(format!("{at}: field {k} is not described"));
                }
                None => {}
            }
        }
    }
}

/// Checks one answer against the operation's documented responses.
fn conforms(spec: &Value, path: &str, method: &str, status: u16, body: &str) -> Vec<String> {
    let op = &spec["paths"][path][method.to_lowercase()];
    let Some(resp) = op["responses"].get(status.to_string()) else {
        return vec![format!(
            "{method} {path}: status {status} is not documented"
        )];
    };
    let mut errors = Vec::new();
    if let Some(schema) = resp
        .get("content")
        .and_then(|c| c.get("application/json"))
        .map(|c| &c["schema"])
    {
        match serde_json::from_str::<Value>(body) {
            Ok(v) => check(
                spec,
                schema,
                &v,
                &format!("{method} {path} {status}"),
                &mut errors,
            ),
            Err(e) => errors.push(format!("{method} {path}: not JSON: {e}")),
        }
    }
    errors
}

/// Every route the sources declare (`.route("...",` in `src/api`).
fn routes_in_sources() -> BTreeSet<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api");
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        for chunk in text.split(".route(").skip(1) {
            let path = chunk.trim_start().trim_start_matches('"');
            if let Some(end) = path.find('"') {
                out.insert(path[..end].to_string());
            }
        }
    }
    out
}

#[tokio::test]
async fn every_route_is_documented_and_every_documented_route_is_served() {
    let spec = spec();
    let documented: BTreeSet<String> = spec["paths"].as_object().unwrap().keys().cloned().collect();
    // The dashboard's page and files are the only routes outside the API.
    let pages: BTreeSet<String> = [
        "/",
        "/assets/dashboard.js",
        "/assets/rules.js",
        "/assets/bridges.js",
        "/assets/dashboard.css",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let served: BTreeSet<String> = routes_in_sources().difference(&pages).cloned().collect();
    assert_eq!(
        served, documented,
        "routes in src/api vs paths in openapi.json"
    );

    let a = Admin::start(StorageMode::Mmap, vec![running("native")]).await;
    for path in &documented {
        let concrete = path
            .replace("{name}", "default")
            .replace("{consumer}", "nobody");
        for method in METHODS {
            let documented = spec["paths"][path].get(method.to_lowercase()).is_some();
            if path == "/api/v1/events" && documented {
                continue; // endless; the API test reads it
            }
            let body = matches!(method, "POST" | "PATCH" | "PUT").then_some("{}");
            let r = a.send(method, &concrete, body).await;
            if documented {
                assert!(
                    r.status != 404 || r.body.contains("Unknown"),
                    "{method} {path}: not served ({})",
                    r.body
                );
                assert_ne!(
                    r.status, 405,
                    "{method} {path} is documented but not served"
                );
            } else {
                assert_eq!(
                    r.status, 405,
                    "{method} {path} is served but not documented"
                );
            }
        }
    }
    a.stop().await;
}

#[tokio::test]
async fn every_answer_validates_against_its_schema() {
    let spec = spec();
    let a = Admin::start(StorageMode::Mmap, vec![running("native"), running("admin")]).await;
    // Some of everything: records, a stream of each storage, a durable and an ephemeral
    // consumer, a subscription, one with an interest, a producer sending and one waiting.
    let link = a.broker.link("sensor");
    let _sub = link
        .subscribe("lab/#", fogline_broker::SubscribeOptions::default())
        .unwrap();
    let interest = fogline_broker::SubscribeOptions {
        interest: Some(fogline_profile::Interest::parse("sensor=li*").unwrap()),
        ..fogline_broker::SubscribeOptions::default()
    };
    let _interested = link.subscribe("site/#", interest).unwrap();
    let profile = |text| fogline_profile::DataProfile::parse(text).unwrap();
    let _sending = a
        .broker
        .announce("site/a", profile("sensor=lidar"), link.origin())
        .unwrap();
    let _waiting = a.broker.announce("x/y", profile("z"), 0).unwrap();
    for i in 0..3u8 {
        link.publish_acked("lab/t", [i]).await.unwrap();
    }
    let opts = |name: Option<&str>| ConsumerOptions {
        name: name.map(str::to_string),
        filter: Some("lab/#".into()),
        start: Start::Earliest,
        ack_timeout: Some(Duration::from_secs(30)),
        max_inflight: 10,
    };
    let mut durable = link.consumer("default", opts(Some("w"))).unwrap();
    durable.fetch(1, Duration::ZERO).await.unwrap();
    let _ephemeral = link.consumer("default", opts(None)).unwrap();

    let calls: Vec<(&str, &str, &str, Option<&str>)> = vec![
        ("GET", "/healthz", "/healthz", None),
        ("GET", "/api/v1/node", "/api/v1/node", None),
        ("GET", "/api/v1/openapi.json", "/api/v1/openapi.json", None),
        ("GET", "/api/v1/streams", "/api/v1/streams", None),
        (
            "POST",
            "/api/v1/streams",
            "/api/v1/streams",
            Some(
                r#"{"name":"s1","subjects":["lab/#"],"storage":"fsync","retention_bytes":0,"retention_age_seconds":3600,"segment_bytes":65536}"#,
            ),
        ),
        (
            "POST",
            "/api/v1/streams",
            "/api/v1/streams",
            Some(r#"{"name":"s2","subjects":["x"],"storage":"memory"}"#),
        ),
        (
            "POST",
            "/api/v1/streams",
            "/api/v1/streams",
            Some(r#"{"name":"s1","subjects":["x"]}"#),
        ),
        (
            "POST",
            "/api/v1/streams",
            "/api/v1/streams",
            Some(r#"{"name":"bad/name","subjects":["x"]}"#),
        ),
        ("GET", "/api/v1/streams", "/api/v1/streams", None),
        (
            "GET",
            "/api/v1/streams/{name}",
            "/api/v1/streams/default",
            None,
        ),
        (
            "GET",
            "/api/v1/streams/{name}",
            "/api/v1/streams/none",
            None,
        ),
        (
            "PATCH",
            "/api/v1/streams/{name}",
            "/api/v1/streams/s1",
            Some(r#"{"subjects":["lab/+"],"retention_age_seconds":null}"#),
        ),
        (
            "PATCH",
            "/api/v1/streams/{name}",
            "/api/v1/streams/s1",
            Some(r#"{"storage":"mmap"}"#),
        ),
        (
            "PATCH",
            "/api/v1/streams/{name}",
            "/api/v1/streams/none",
            Some(r#"{}"#),
        ),
        (
            "POST",
            "/api/v1/streams/{name}/purge",
            "/api/v1/streams/s1/purge",
            None,
        ),
        (
            "POST",
            "/api/v1/streams/{name}/purge",
            "/api/v1/streams/none/purge",
            None,
        ),
        (
            "GET",
            "/api/v1/streams/{name}/consumers",
            "/api/v1/streams/default/consumers",
            None,
        ),
        (
            "GET",
            "/api/v1/streams/{name}/consumers",
            "/api/v1/streams/none/consumers",
            None,
        ),
        (
            "GET",
            "/api/v1/streams/{name}/consumers/{consumer}",
            "/api/v1/streams/default/consumers/w",
            None,
        ),
        (
            "GET",
            "/api/v1/streams/{name}/consumers/{consumer}",
            "/api/v1/streams/default/consumers/x",
            None,
        ),
        (
            "DELETE",
            "/api/v1/streams/{name}/consumers/{consumer}",
            "/api/v1/streams/default/consumers/w",
            None,
        ),
        ("GET", "/api/v1/consumers", "/api/v1/consumers", None),
        (
            "GET",
            "/api/v1/consumers",
            "/api/v1/consumers?stream=default",
            None,
        ),
        (
            "GET",
            "/api/v1/consumers",
            "/api/v1/consumers?stream=none",
            None,
        ),
        ("GET", "/api/v1/consumers", "/api/v1/consumers?what=1", None),
        ("GET", "/api/v1/connections", "/api/v1/connections", None),
        (
            "GET",
            "/api/v1/subscriptions",
            "/api/v1/subscriptions",
            None,
        ),
        ("GET", "/api/v1/producers", "/api/v1/producers", None),
        (
            "DELETE",
            "/api/v1/streams/{name}",
            "/api/v1/streams/s2",
            None,
        ),
        (
            "DELETE",
            "/api/v1/streams/{name}",
            "/api/v1/streams/s2",
            None,
        ),
    ];
    let mut errors = Vec::new();
    let mut statuses = BTreeSet::new();
    for (method, path, concrete, body) in calls {
        let r = a.send(method, concrete, body).await;
        statuses.insert((path, method, r.status));
        errors.extend(conforms(&spec, path, method, r.status, &r.body));
    }
    // After the durable consumer closes, it is listed closed, and can be deleted.
    drop(durable);
    for (method, path, concrete) in [
        ("GET", "/api/v1/consumers", "/api/v1/consumers"),
        (
            "DELETE",
            "/api/v1/streams/{name}/consumers/{consumer}",
            "/api/v1/streams/default/consumers/w",
        ),
    ] {
        let r = a.send(method, concrete, None).await;
        statuses.insert((path, method, r.status));
        errors.extend(conforms(&spec, path, method, r.status, &r.body));
    }
    assert!(errors.is_empty(), "{errors:#?}");
    // The calls reached the answers they meant to.
    for want in [
        ("/api/v1/streams", "POST", 201),
        ("/api/v1/streams", "POST", 409),
        ("/api/v1/streams", "POST", 400),
        ("/api/v1/streams/{name}", "GET", 404),
        ("/api/v1/streams/{name}", "PATCH", 400),
        ("/api/v1/streams/{name}/consumers/{consumer}", "DELETE", 409),
        ("/api/v1/streams/{name}/consumers/{consumer}", "DELETE", 204),
        ("/api/v1/streams/{name}", "DELETE", 204),
        ("/api/v1/streams/{name}", "DELETE", 404),
        ("/api/v1/consumers", "GET", 400),
    ] {
        assert!(
            statuses.contains(&want),
            "{want:?} not reached: {statuses:?}"
        );
    }
    // /healthz's 503 answer validates too.
    let failed = fogline_admin::ComponentStatus {
        state: fogline_admin::ComponentState::Failed,
        detail: Some("x".into()),
        ..running("mqtt")
    };
    let b = Admin::start(StorageMode::Memory, vec![failed]).await;
    let r = b.get("/healthz").await;
    assert_eq!(r.status, 503);
    assert!(conforms(&spec, "/healthz", "GET", 503, &r.body).is_empty());
    b.stop().await;
    a.stop().await;
}
