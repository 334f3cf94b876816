//! The rules engine on a real broker: records published over the link go through a rule
//! and its results come back as records.

use std::time::Duration;

use fogline_broker::link::{Link, LinkSubscription};
use fogline_broker::{Broker, BrokerConfig, StorageMode, StreamConfig, SubscribeOptions};
use fogline_rules::{RuleSpec, Rules, State};

#[path = "../../fogline-net/tests/pki/mod.rs"]
mod pki;
use pki::{Kind, Pki};

fn broker(dir: &std::path::Path) -> Broker {
    let config = BrokerConfig {
        storage: StorageMode::Mmap,
        data_dir: dir.to_path_buf(),
        streams: vec![StreamConfig::new("other", vec!["other/#".into()])],
        ..BrokerConfig::default()
    };
    Broker::open(config).unwrap().0
}

fn sql_stream(broker: &Broker, sql: &str) {
    let def = match fogline_sql::parse(sql).unwrap() {
        fogline_sql::ast::Statement::CreateStream(d) => d,
        _ => panic!("not a stream"),
    };
    let mut cfg = StreamConfig::new(def.name.clone(), vec![def.options.datasource.unwrap()]);
    cfg.sql = Some(sql.to_string());
    broker.create_stream(cfg).unwrap();
}

const DEMO: &str = r#"CREATE STREAM demo (id STRING, temperature FLOAT, ts BIGINT)
    WITH (DATASOURCE="sensors/+/temp", FORMAT="json", TIMESTAMP="ts")"#;

fn rule(json: serde_json::Value) -> RuleSpec {
    RuleSpec::from_json(json.to_string().as_bytes()).unwrap()
}

async fn next_json(sub: &mut LinkSubscription) -> (String, serde_json::Value) {
    let m = tokio::time::timeout(Duration::from_secs(10), sub.recv())
        .await
        .expect("a result within 10 s")
        .expect("subscription open");
    (
        m.topic.to_string(),
        serde_json::from_slice(&m.payload).unwrap(),
    )
}

async fn publish(link: &Link, topic: &str, body: serde_json::Value) {
    link.publish_acked(topic, body.to_string()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_rule_publishes_matching_rows_on_a_templated_topic() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path());
    sql_stream(&b, DEMO);
    let rules = Rules::open(b.clone(), Some(dir.path().join(".rules")), None, 100).unwrap();
    let link = b.link("test");
    let mut out = link
        .subscribe("alerts/#", SubscribeOptions::default())
        .unwrap();
    rules
        .create(rule(serde_json::json!({
            "id": "hot",
            "sql": "SELECT id, temperature * 2 AS t2 FROM demo WHERE temperature > 50",
            "actions": [{"publish": {"topic": "alerts/{id}", "sendSingle": true}}]
        })))
        .unwrap();
    for (id, t) in [("a", 20.0), ("b", 60.5), ("c", 51.0)] {
        publish(
            &link,
            &format!("sensors/{id}/temp"),
            serde_json::json!({"id": id, "temperature": t, "ts": 1}),
        )
        .await;
    }
    let (topic, v) = next_json(&mut out).await;
    assert_eq!(topic, "alerts/b");
    assert_eq!(v, serde_json::json!({"id": "b", "t2": 121.0}));
    let (topic, v) = next_json(&mut out).await;
    assert_eq!(topic, "alerts/c");
    assert_eq!(v["t2"], 102.0);
    let (status, stats) = rules.status("hot").unwrap();
    assert_eq!(status.state, State::Running);
    assert_eq!(
        stats.records_in.load(std::sync::atomic::Ordering::Relaxed),
        3
    );
    rules.shut_down().await;
}

/// Event-time tumbling windows: deterministic, each window closes when a record of a later
/// window arrives (lateTolerance 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tumbling_window_average_per_key() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path());
    sql_stream(&b, DEMO);
    let rules = Rules::open(b.clone(), Some(dir.path().join(".rules")), None, 100).unwrap();
    let link = b.link("test");
    let mut out = link.subscribe("avg", SubscribeOptions::default()).unwrap();
    rules
        .create(rule(serde_json::json!({
            "id": "avg",
            "sql": "SELECT id, avg(temperature) AS a, count(*) AS n FROM demo GROUP BY id, TUMBLINGWINDOW(ss, 10) ORDER BY id",
            "actions": [{"publish": {"topic": "avg"}}],
            "options": {"isEventTime": true, "lateTolerance": 0}
        })))
        .unwrap();
    let readings = [
        ("a", 10.0, 1_000),
        ("b", 1.0, 2_000),
        ("a", 20.0, 9_999),
        ("b", 3.0, 10_000),
    ];
    for (id, t, ts) in readings {
        publish(
            &link,
            "sensors/x/temp",
            serde_json::json!({"id": id, "temperature": t, "ts": ts}),
        )
        .await;
    }
    let (_, v) = next_json(&mut out).await;
    assert_eq!(
        v,
        serde_json::json!([{"id": "a", "a": 15.0, "n": 2}, {"id": "b", "a": 1.0, "n": 1}])
    );
    rules.shut_down().await;
}

/// A qos 1 rule stopped mid-window resumes from its checkpoint: the window that was open
/// when it stopped is produced whole after the restart, with records from both runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_qos1_rule_resumes_its_window_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path());
    sql_stream(&b, DEMO);
    let link = b.link("test");
    let mut out = link.subscribe("sum", SubscribeOptions::default()).unwrap();
    let spec = rule(serde_json::json!({
        "id": "sum",
        "sql": "SELECT sum(temperature) AS s, count(*) AS n FROM demo GROUP BY TUMBLINGWINDOW(ss, 10)",
        "actions": [{"publish": {"topic": "sum"}}],
        "options": {"qos": 1, "isEventTime": true, "lateTolerance": 0, "checkpointInterval": 100000}
    }));
    let rules = Rules::open(b.clone(), Some(dir.path().join(".rules")), None, 100).unwrap();
    rules.create(spec).unwrap();
    publish(
        &link,
        "sensors/x/temp",
        serde_json::json!({"id": "a", "temperature": 1.0, "ts": 1_000}),
    )
    .await;
    publish(
        &link,
        "sensors/x/temp",
        serde_json::json!({"id": "a", "temperature": 2.0, "ts": 2_000}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    rules.shut_down().await;
    drop(rules);
    // Records published while the rule is down are read after it restarts.
    publish(
        &link,
        "sensors/x/temp",
        serde_json::json!({"id": "a", "temperature": 4.0, "ts": 3_000}),
    )
    .await;
    let rules = Rules::open(b.clone(), Some(dir.path().join(".rules")), None, 100).unwrap();
    publish(
        &link,
        "sensors/x/temp",
        serde_json::json!({"id": "a", "temperature": 8.0, "ts": 12_000}),
    )
    .await;
    let (_, v) = next_json(&mut out).await;
    assert_eq!(v, serde_json::json!([{"s": 7.0, "n": 3}]));
    rules.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_highest_priority_trigger_of_the_conflict_set_fires() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path());
    sql_stream(&b, DEMO);
    let rules = Rules::open(b.clone(), None, None, 100).unwrap();
    let link = b.link("test");
    let mut out = link.subscribe("t/#", SubscribeOptions::default()).unwrap();
    rules
        .create(rule(serde_json::json!({
            "id": "trig",
            "sql": "SELECT * FROM demo",
            "triggers": [
                {"name": "warm", "priority": 1, "if": "temperature > 30",
                 "then": {"publish": {"topic": "t/warm"}}},
                {"name": "hot", "priority": 5, "if": "temperature > 60", "fire": "once",
                 "then": {"publish": {"topic": "t/hot"}}}
            ]
        })))
        .unwrap();
    for t in [70.0, 70.0, 40.0, 10.0] {
        publish(
            &link,
            "sensors/x/temp",
            serde_json::json!({"id": "a", "temperature": t, "ts": 1}),
        )
        .await;
    }
    // 70: both hold, hot wins; 70 again: hot fired once already, warm wins; 40: warm.
    // (Each trigger's action has its own queue: their outputs may interleave.)
    let mut topics: Vec<String> = [
        next_json(&mut out).await.0,
        next_json(&mut out).await.0,
        next_json(&mut out).await.0,
    ]
    .into();
    topics.sort();
    assert_eq!(topics, ["t/hot", "t/warm", "t/warm"]);
    assert!(tokio::time::timeout(Duration::from_millis(300), out.recv())
        .await
        .is_err());
    rules.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_persist_with_their_state_and_bad_rules_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path());
    sql_stream(&b, DEMO);
    let store = dir.path().join(".rules");
    let rules = Rules::open(b.clone(), Some(store.clone()), None, 2).unwrap();
    let mk = |id: &str| {
        rule(serde_json::json!({"id": id, "sql": "SELECT * FROM demo", "actions": [{"nop": {}}]}))
    };
    rules.create(mk("one")).unwrap();
    rules.create(mk("two")).unwrap();
    assert!(matches!(
        rules.create(mk("three")),
        Err(fogline_rules::RuleError::TooMany(2))
    ));
    assert!(matches!(
        rules.create(mk("one")),
        Err(fogline_rules::RuleError::Exists(_))
    ));
    let bad = rule(serde_json::json!({"id": "bad", "sql": "SELECT * FROM nowhere"}));
    let e = rules.create(bad).unwrap_err().to_string();
    assert!(e.contains("unknown stream"), "{e}");
    let bad = rule(serde_json::json!({"id": "bad", "sql": "SELECT nosuchfn(1) FROM demo"}));
    assert!(rules.create(bad).is_err());
    rules.stop("two").await.unwrap();
    rules.shut_down().await;
    drop(rules);
    let rules = Rules::open(b.clone(), Some(store), None, 2).unwrap();
    let states: Vec<(String, State)> = rules.list().into_iter().map(|s| (s.id, s.state)).collect();
    assert_eq!(
        states,
        [
            ("one".to_string(), State::Running),
            ("two".to_string(), State::Stopped)
        ]
    );
    rules.delete("one").await.unwrap();
    assert!(rules.get("one").is_none());
    rules.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_matcher_operator_counts_patterns_of_an_uploaded_set() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path());
    sql_stream(
        &b,
        r#"CREATE STREAM raw () WITH (DATASOURCE="raw", FORMAT="binary")"#,
    );
    let rules = Rules::open(b.clone(), None, None, 100).unwrap();
    rules
        .patterns()
        .put(fogline_rules::patterns::PatternSet {
            name: "bad".into(),
            patterns: vec!["evil".into(), "EXPLOIT".into()],
            case_insensitive: true,
            hex: false,
        })
        .unwrap();
    let link = b.link("test");
    let mut out = link.subscribe("hits", SubscribeOptions::default()).unwrap();
    rules
        .create(rule(serde_json::json!({
            "id": "m",
            "sql": "SELECT match_count(self, 'bad') AS n FROM raw WHERE matches(self, 'bad')",
            "actions": [{"publish": {"topic": "hits", "sendSingle": true}}]
        })))
        .unwrap();
    link.publish_acked("raw", "nothing here").await.unwrap();
    link.publish_acked("raw", "an Evil exploit, evil!")
        .await
        .unwrap();
    let (_, v) = next_json(&mut out).await;
    assert_eq!(v, serde_json::json!({"n": 3}));
    rules.shut_down().await;
}

/// A qos 1 rule whose stream is deleted fails; it is restarted as its strategy says, and
/// stays failed, with the reason, once the attempts are spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_rule_is_restarted_then_left_failed() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path());
    sql_stream(&b, DEMO);
    let rules = Rules::open(b.clone(), None, None, 100).unwrap();
    rules
        .create(rule(serde_json::json!({
            "id": "fragile",
            "sql": "SELECT * FROM demo",
            "actions": [{"nop": {}}],
            "options": {"qos": 1, "restartStrategy": {"attempts": 2, "delay": 10, "jitterFactor": 0}}
        })))
        .unwrap();
    b.delete_stream("demo").unwrap_or_else(|e| panic!("{e}"));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let s = rules.list().remove(0);
        if s.state == State::Failed {
            assert_eq!(s.restarts, 2);
            let reason = s.reason.unwrap();
            assert!(reason.contains("demo"), "{reason}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "still {:?}", s.state);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    rules.shut_down().await;
}

/// The next request body the test server took, within 10 s.
async fn next_body(bodies: &mut tokio::sync::mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(10), bodies.recv())
        .await
        .expect("a request within 10 s")
        .expect("the server runs")
}

/// Reads one HTTP request from `s` (one per connection), answers `status` and closes; the
/// request's body, or None when the connection ended first.
async fn answer_one<S>(s: &mut S, status: &str) -> Option<String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = vec![0u8; 65536];
    let mut got = 0;
    loop {
        let n = s.read(&mut buf[got..]).await.ok()?;
        got += n;
        let text = String::from_utf8_lossy(&buf[..got]).to_string();
        if let Some(i) = text.find("\r\n\r\n") {
            let len: usize = text
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if got >= i + 4 + len {
                let resp =
                    format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                s.write_all(resp.as_bytes()).await.ok()?;
                let _ = s.shutdown().await;
                return Some(text[i + 4..i + 4 + len].to_string());
            }
        }
        if n == 0 {
            return None;
        }
    }
}

/// A `rest` action posts each result; an answer of 503 is retried until it succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rest_action_retries_until_the_server_takes_it() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, mut bodies) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut answered = 0;
        loop {
            let (mut s, _) = listener.accept().await.unwrap();
            let tx = tx.clone();
            answered += 1;
            let status = if answered == 1 {
                "503 Service Unavailable"
            } else {
                "200 OK"
            };
            tokio::spawn(async move {
                if let Some(body) = answer_one(&mut s, status).await {
                    tx.send(body).unwrap();
                }
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path());
    sql_stream(&b, DEMO);
    let rules = Rules::open(b.clone(), None, None, 100).unwrap();
    rules
        .create(rule(serde_json::json!({
            "id": "hook",
            "sql": "SELECT id FROM demo",
            "actions": [{"rest": {"url": format!("http://{addr}/hook"), "retryInterval": 10, "sendSingle": true}}]
        })))
        .unwrap();
    publish(
        &b.link("test"),
        "sensors/a/temp",
        serde_json::json!({"id": "a", "temperature": 1.0, "ts": 1}),
    )
    .await;
    let first = next_body(&mut bodies).await;
    let second = next_body(&mut bodies).await;
    assert_eq!(first, r#"{"id":"a"}"#);
    assert_eq!(second, first, "retried after the 503");
    let (_, stats) = rules.status("hook").unwrap();
    let s = stats.sinks.lock()[0].1.clone();
    let n = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while n(&s.records_out) < 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        (n(&s.exceptions), n(&s.records_out), n(&s.dropped)),
        (1, 1, 0)
    );
    rules.shut_down().await;
}

/// A `rest` action to an `https://` url verifies the server against `rootCaPath` and posts
/// over TLS; a wrong CA fails the delivery, not the rule; TLS options without https, or
/// https without a CA, fail the rule's creation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rest_action_posts_over_https_to_a_server_its_ca_signed() {
    use fogline_net::tls::{TlsAcceptor, TlsConfig};
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(&dir.path().join("pki"), Kind::Ec, "Rest CA", "unused");
    let other = Pki::new(&dir.path().join("other"), Kind::Ec, "Other CA", "unused");
    let acceptor = TlsAcceptor::new(
        TlsConfig {
            certfile: Some(p.server_cert.clone()),
            keyfile: Some(p.server_key.clone()),
            ..TlsConfig::default()
        },
        Duration::from_secs(5),
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, mut bodies) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let acceptor = std::sync::Arc::new(acceptor);
        loop {
            let (s, _) = listener.accept().await.unwrap();
            let (tx, acceptor) = (tx.clone(), acceptor.clone());
            tokio::spawn(async move {
                let Ok(mut s) = acceptor.accept(s).await else {
                    return;
                };
                if let Some(body) = answer_one(&mut s, "200 OK").await {
                    tx.send(body).unwrap();
                }
            });
        }
    });
    let b = broker(dir.path());
    sql_stream(&b, DEMO);
    let rules = Rules::open(b.clone(), None, None, 100).unwrap();
    let https = format!("https://localhost:{port}/hook");
    let rest = |id: &str, url: &str, opts: serde_json::Value| {
        let mut action = serde_json::json!({"url": url, "retryInterval": 10, "sendSingle": true});
        let extra = opts.as_object().unwrap().clone();
        action.as_object_mut().unwrap().extend(extra);
        let actions = serde_json::json!([{ "rest": action }]);
        rule(serde_json::json!({"id": id, "sql": "SELECT id FROM demo", "actions": actions}))
    };
    let no_ca = rules
        .create(rest("no-ca", &https, serde_json::json!({})))
        .unwrap_err();
    assert!(no_ca.to_string().contains("rootCaPath"), "{no_ca}");
    let http = format!("http://127.0.0.1:{port}/hook");
    let plain = rules
        .create(rest(
            "plain",
            &http,
            serde_json::json!({"rootCaPath": p.ca}),
        ))
        .unwrap_err();
    assert!(plain.to_string().contains("for an https:// url"), "{plain}");

    let wrong = serde_json::json!({"rootCaPath": other.ca, "retryCount": 0});
    rules.create(rest("wrong", &https, wrong)).unwrap();
    let right = serde_json::json!({"rootCaPath": p.ca});
    rules.create(rest("hook", &https, right)).unwrap();
    publish(
        &b.link("test"),
        "sensors/a/temp",
        serde_json::json!({"id": "a", "temperature": 1.0, "ts": 1}),
    )
    .await;
    let got = next_body(&mut bodies).await;
    assert_eq!(got, r#"{"id":"a"}"#);
    let (_, stats) = rules.status("wrong").unwrap();
    let s = stats.sinks.lock()[0].1.clone();
    let n = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while n(&s.exceptions) < 1 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!((n(&s.exceptions), n(&s.records_out)), (1, 0));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), bodies.recv())
            .await
            .is_err(),
        "nothing reached the server through a client that trusts another CA"
    );
    rules.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_profile_gives_its_rules_only_matching_records() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path());
    sql_stream(
        &b,
        r#"CREATE STREAM lidar (id STRING, v FLOAT)
            WITH (DATASOURCE="scan/#", FORMAT="json", PROFILE="sensor=li* alt=100..")"#,
    );
    let rules = Rules::open(b.clone(), Some(dir.path().join(".rules")), None, 100).unwrap();
    let link = b.link("test");
    let mut out = link
        .subscribe("seen/#", SubscribeOptions::default())
        .unwrap();
    for (id, qos) in [("live", 0), ("durable", 1)] {
        rules
            .create(rule(serde_json::json!({
                "id": id,
                "sql": "SELECT id FROM lidar",
                "actions": [{"publish": {"topic": format!("seen/{id}"), "sendSingle": true}}],
                "options": {"qos": qos}
            })))
            .unwrap();
    }
    // Both rules are reading once a record published now reaches them both.
    let opts = fogline_broker::link::PublishOptions {
        acked: true,
        ..Default::default()
    };
    for (id, sensor, alt) in [
        ("a", "lidar", "120"),
        ("b", "radar", "120"),
        ("c", "lidar", "50"),
        ("d", "lidar2", "300"),
        ("e", "Lidar", "300"),
    ] {
        link.publish_with(
            "scan/x",
            &[("sensor", sensor.as_bytes()), ("alt", alt.as_bytes())],
            serde_json::json!({"id": id, "v": 1.0}).to_string(),
            opts,
        )
        .await
        .unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..4 {
        let Ok(Some(m)) = tokio::time::timeout(Duration::from_secs(10), out.recv()).await else {
            panic!("got only {got:?}");
        };
        let v: serde_json::Value = serde_json::from_slice(&m.payload).unwrap();
        got.push((m.topic.to_string(), v["id"].as_str().unwrap().to_string()));
    }
    got.sort();
    let want: Vec<(String, String)> = [
        ("seen/durable", "a"),
        ("seen/durable", "d"),
        ("seen/live", "a"),
        ("seen/live", "d"),
    ]
    .iter()
    .map(|(t, i)| (t.to_string(), i.to_string()))
    .collect();
    assert_eq!(got, want);
    // A bad PROFILE makes the stream's rules invalid, with the reason.
    sql_stream(
        &b,
        r#"CREATE STREAM bad (id STRING) WITH (DATASOURCE="bad/#", FORMAT="json", PROFILE="alt=1..x")"#,
    );
    let err = rules
        .create(rule(serde_json::json!({
            "id": "bad", "sql": "SELECT id FROM bad", "actions": [{"log": {}}]
        })))
        .err()
        .unwrap();
    assert!(err.to_string().contains("PROFILE"), "{err}");
}
