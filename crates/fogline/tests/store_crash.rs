//! The queryable store after kill -9: every acknowledged record is found by every query
//! kind (exact, partial keyword, wildcard, range, geo box and radius, topic, time range,
//! latest-per-key, paging), before and after the server is killed and started again, and
//! records deleted from the store stay deleted.

mod support;

use std::path::Path;

use fogline_client::{Client, ClientOptions, PublishRecord, StoreQuery};
use fogline_profile::{DataProfile, Interest};
use serde_json::Value;

fn serve(dir: &Path) -> support::Served {
    let config = dir.join("fogline.toml");
    std::fs::write(&config, "[store]\nstreams = [\"default\"]\nmax_page = 50\n").unwrap();
    support::serve([
        "--config",
        config.to_str().unwrap(),
        "--data-dir",
        dir.join("data").to_str().unwrap(),
    ])
}

/// The profile and topic of record `i`.
fn profile(i: usize) -> (String, String) {
    let sensor = ["lidar", "Lidar2", "radar", "sonar", "雷达"][i % 5];
    let lat = 40.0 + (i % 20) as f64 * 0.01;
    let lon = if i % 7 == 0 {
        179.99
    } else {
        -74.4 + (i % 10) as f64 * 0.01
    };
    let mut p = format!(
        "id=r{i} sensor={sensor} alt={} geo={lat:.2},{lon:.2}",
        i % 300
    );
    if i % 3 == 0 {
        p.push_str(" urgent");
    }
    (p, format!("site/{}/{}", ["nj", "ny"][i % 2], sensor))
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Every offset the store answers for `profile` (following pages).
async fn query(http: &str, profile: &str, extra: &str) -> Vec<u64> {
    let mut out = Vec::new();
    let mut after = String::new();
    loop {
        let path = format!("/api/v1/query?profile={}{extra}{after}", encode(profile));
        let v: Value = support::admin(http, "GET", &path, None).await;
        for r in v["records"].as_array().unwrap() {
            out.push(r["offset"].as_u64().unwrap());
        }
        match v["next"].as_u64() {
            Some(n) => after = format!("&after={n}"),
            None => return out,
        }
    }
}

const QUERIES: &[&str] = &[
    "id=r17",
    "sensor=lidar",
    "sensor=Li*",
    "sensor=*dar",
    "sensor=?i*r?",
    "sensor=雷*",
    "alt=100..120",
    "alt=250..",
    "urgent alt=..10",
    "geo=40.05,-74.40..40.10,-74.30",
    "geo=40.0,179.0..40.2,-179.0",
    "geo~40.10,-74.35,3km",
    "@site/ny/# sensor=*ar",
    "",
];

/// Every offset the store answers for `interest` over the native protocol (pages of 7).
async fn native_query(native: &str, interest: &str, newest_first: bool) -> Vec<u64> {
    let client = Client::connect(native, ClientOptions::default())
        .await
        .unwrap();
    let mut q = StoreQuery {
        interest: interest.to_string(),
        limit: 7,
        newest_first,
        ..StoreQuery::default()
    };
    let mut out = Vec::new();
    loop {
        let page = client.query(&q).await.unwrap();
        assert!(page.records.len() <= 7);
        out.extend(page.records.iter().map(|r| r.offset));
        match page.next {
            Some(n) => q.after = Some(n),
            None => return out,
        }
    }
}

async fn check_all(http: &str, native: &str, profiles: &[(String, String)], deleted: &[u64]) {
    for q in QUERIES {
        let interest = Interest::parse(q).unwrap();
        let want: Vec<u64> = profiles
            .iter()
            .enumerate()
            .filter(|(i, (p, t))| {
                !deleted.contains(&(*i as u64))
                    && interest.matches(&DataProfile::parse(p).unwrap(), t)
            })
            .map(|(i, _)| i as u64)
            .collect();
        assert_eq!(query(http, q, "").await, want, "query {q:?}");
        assert_eq!(native_query(native, q, false).await, want, "native {q:?}");
        let mut newest: Vec<u64> = want.clone();
        newest.reverse();
        assert_eq!(
            query(http, q, "&order=desc").await,
            newest,
            "query {q:?} desc"
        );
        assert_eq!(
            native_query(native, q, true).await,
            newest,
            "native {q:?} desc"
        );
    }
    // Latest per key: the newest record of each sensor.
    let v: Value = support::admin(
        http,
        "GET",
        "/api/v1/query?latest_by=sensor&order=desc",
        None,
    )
    .await;
    let got: Vec<u64> = v["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["offset"].as_u64().unwrap())
        .collect();
    let mut want: Vec<u64> = (0..5)
        .map(|k| {
            (0..profiles.len())
                .rev()
                .find(|i| i % 5 == k && !deleted.contains(&(*i as u64)))
                .unwrap() as u64
        })
        .collect();
    want.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(got, want);
    // A time range: nothing before the epoch's first second, everything since then.
    assert!(query(http, "", "&until=1").await.is_empty());
    assert_eq!(
        query(http, "", "&since=1h").await.len(),
        profiles.len() - deleted.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_record_is_found_after_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = serve(dir.path());
    let client = Client::connect(&server.native, ClientOptions::default())
        .await
        .unwrap();
    let profiles: Vec<(String, String)> = (0..600).map(profile).collect();
    for (i, (p, topic)) in profiles.iter().enumerate() {
        let record = PublishRecord {
            topic: topic.clone(),
            headers: DataProfile::parse(p).unwrap().to_headers().unwrap(),
            payload: format!("reading {i}").into(),
            ..PublishRecord::default()
        };
        client.publish_acked(&record).await.unwrap();
    }
    let http = server.http.clone().unwrap();
    check_all(&http, &server.native, &profiles, &[]).await;
    let v: Value = support::admin(&http, "GET", "/api/v1/query?profile=id%3Dr4", None).await;
    assert_eq!(v["records"][0]["payload"], "reading 4");
    assert_eq!(v["records"][0]["topic"], "site/nj/雷达");

    server.kill();
    drop(client);
    let mut server = serve(dir.path());
    let http = server.http.clone().unwrap();
    check_all(&http, &server.native, &profiles, &[]).await;

    // Delete the urgent lidar records; they stay deleted across another kill -9.
    let v: Value = support::admin(
        &http,
        "DELETE",
        "/api/v1/query?profile=urgent%20sensor%3Dlidar",
        None,
    )
    .await;
    let mut deleted: Vec<u64> = (0..600u64).filter(|i| i % 15 == 0).collect();
    assert_eq!(v["deleted"], deleted.len());
    // And over the native protocol: the sonar records at 250 m and up.
    let client = Client::connect(&server.native, ClientOptions::default())
        .await
        .unwrap();
    let n = client
        .delete_stored(&StoreQuery {
            interest: "sensor=sonar alt=250..".into(),
            ..StoreQuery::default()
        })
        .await
        .unwrap();
    let sonar: Vec<u64> = (0..600u64)
        .filter(|i| i % 5 == 3 && i % 300 >= 250)
        .collect();
    assert_eq!(n, sonar.len() as u64);
    deleted.extend(sonar);
    deleted.sort_unstable();
    drop(client);
    check_all(&http, &server.native, &profiles, &deleted).await;
    server.kill();
    let server = serve(dir.path());
    let http = server.http.clone().unwrap();
    check_all(&http, &server.native, &profiles, &deleted).await;
    let stats: Value = support::admin(&http, "GET", "/api/v1/store", None).await;
    assert_eq!(stats[0]["records"], 600 - deleted.len());
    assert_eq!(stats[0]["deleted"], deleted.len());
    // Over the native protocol: the records themselves, and errors with reasons.
    let client = Client::connect(&server.native, ClientOptions::default())
        .await
        .unwrap();
    let page = client
        .query(&StoreQuery {
            interest: "id=r4".into(),
            ..StoreQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(&page.records[0].payload[..], b"reading 4");
    assert_eq!(page.records[0].topic.as_str(), "site/nj/雷达");
    for (q, code) in [
        (
            StoreQuery {
                interest: "alt=1..x".into(),
                ..StoreQuery::default()
            },
            fogline_wire::ErrorCode::Invalid,
        ),
        (
            StoreQuery {
                stream: "nope".into(),
                ..StoreQuery::default()
            },
            fogline_wire::ErrorCode::UnknownStream,
        ),
    ] {
        let err = client.query(&q).await.err().unwrap();
        assert_eq!(err.server_code(), Some(code), "{err}");
    }
}
