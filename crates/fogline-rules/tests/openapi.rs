//! The rules component's OpenAPI descriptions name exactly the routes its sources serve,
//! with every method (the admin API merges them into `/api/v1/openapi.json`).

use std::collections::BTreeSet;

/// `(path, method)` of every route in a source file (`.route("PATH", get(..).post(..))`).
fn served(source: &str) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for chunk in source.split(".route(").skip(1) {
        let chunk = chunk.trim_start().trim_start_matches('"');
        let Some(end) = chunk.find('"') else { continue };
        let path = chunk[..end].to_string();
        // The method router: up to the call's closing parenthesis at depth 0.
        let mut depth = 1;
        let mut body = String::new();
        for c in chunk[end + 1..].chars() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                break;
            }
            body.push(c);
        }
        for m in ["get", "post", "put", "patch", "delete"] {
            if body.contains(&format!("{m}(")) {
                out.insert((path.clone(), m.to_string()));
            }
        }
    }
    out
}

fn documented(doc: &str) -> BTreeSet<(String, String)> {
    let v: serde_json::Value = serde_json::from_str(doc).expect("the description is JSON");
    let mut out = BTreeSet::new();
    for (path, item) in v["paths"].as_object().expect("paths") {
        for m in ["get", "post", "put", "patch", "delete"] {
            if item.get(m).is_some() {
                out.insert((path.clone(), m.to_string()));
            }
        }
    }
    out
}

#[test]
fn every_route_is_described_and_every_description_is_served() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let rules = std::fs::read_to_string(dir.join("api.rs")).unwrap();
    assert!(served(&rules).len() >= 15, "{:?}", served(&rules));
    assert_eq!(served(&rules), documented(fogline_rules::api::OPENAPI));
    let functions = std::fs::read_to_string(dir.join("functions/api.rs")).unwrap();
    assert_eq!(
        served(&functions),
        documented(fogline_rules::functions::api::OPENAPI)
    );
}
