//! The Kafka bridges against a real Kafka whose listener wants TLS with a client certificate
//! and SASL: a bridge out (SCRAM-SHA-256) forwards the stream's records, a bridge in (PLAIN)
//! consumes a topic into the stream and commits its group's offsets, and bridges with a
//! wrong password or trusting another CA say why they cannot. Kafka's plain listener is
//! the independent check (kcat, Kafka's group tool).
//!
//! Needs Kafka (`bench/peers/install.sh kafka`) and kcat; skipped without them unless
//! `FOGLINE_TEST_KAFKA=1`.

#[path = "../../fogline-net/tests/pki/mod.rs"]
mod pki;
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use fogline_client::{Client, ClientOptions, ConsumerOptions, PublishRecord, StartPosition};
use serde_json::Value;
use support::kafka::Kafka;

const USER: (&str, &str) = ("edge", "edge-secret");

/// A `security` table: `protocol = "sasl_ssl"` with `mechanism`, `password`, the CA file
/// `ca` and the client certificate of `p`.
fn security(mechanism: &str, password: &str, ca: &Path, p: &pki::Pki) -> String {
    format!(
        "security = {{ protocol = \"SASL_SSL\", sasl_mechanism = \"{mechanism}\", \
         sasl_username = \"{}\", sasl_password = \"{password}\", ssl_ca_location = {ca:?}, \
         ssl_certificate_location = {:?}, ssl_key_location = {:?} }}\n",
        USER.0, p.client_cert, p.client_key
    )
}

async fn status(http: &str, name: &str) -> Value {
    support::admin(http, "GET", &format!("/api/v1/bridges/{name}"), None).await
}

async fn wait_status(http: &str, name: &str, what: &str, ok: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let s = status(http, name).await;
        if ok(&s) {
            return;
        }
        assert!(Instant::now() < deadline, "waited for {what}: {s}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bridges_reach_a_kafka_behind_tls_and_sasl() {
    let kdir = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = pki::Pki::new(&dir.path().join("pki"), pki::Kind::Ec, "kafka CA", "edge");
    let other = pki::Pki::new(&dir.path().join("other"), pki::Kind::Ec, "other CA", "x");
    let Some((kafka, secure)) =
        Kafka::start_secure(kdir.path(), &p.ca, &p.server_cert, &p.server_key, USER)
    else {
        return;
    };
    kafka.create_topic("in-topic", 1).await;
    let records = (0..20)
        .map(|i| rskafka::record::Record {
            key: None,
            value: Some(format!("in-{i}").into_bytes()),
            headers: BTreeMap::new(),
            timestamp: chrono::DateTime::from_timestamp_millis(1_764_000_000_000).unwrap(),
        })
        .collect();
    kafka.produce("in-topic", 0, records).await;

    let bootstrap = format!("bootstrap = [\"{secure}\"]\nretry_max = \"1s\"\n");
    let text = [
        "[node]\nid = \"edge-1\"\n".to_string(),
        format!(
            "[[bridge.kafka]]\nname = \"out\"\nstream = \"default\"\nfilter = \"out/#\"\n\
                 topic = \"edge-secure\"\nkey = \"none\"\n{bootstrap}{}",
            security("SCRAM-SHA-256", USER.1, &p.ca, &p)
        ),
        format!(
            "[[bridge.kafka]]\nname = \"wrong-password\"\nstream = \"default\"\n\
                 topic = \"never\"\n{bootstrap}{}",
            security("SCRAM-SHA-256", "nope", &p.ca, &p)
        ),
        format!(
            "[[bridge.kafka]]\nname = \"other-ca\"\nstream = \"default\"\n\
                 topic = \"never\"\n{bootstrap}{}",
            security("PLAIN", USER.1, &other.ca, &p)
        ),
        format!(
            "[[bridge.kafka_in]]\nname = \"in\"\ntopics = [\"in-topic\"]\ngroup = \"edge-g\"\n\
                 commit_interval = \"200ms\"\n{bootstrap}{}",
            security("PLAIN", USER.1, &p.ca, &p)
        ),
    ]
    .join("\n");
    let server = support::serve_config(dir.path(), &text);
    let http = server.http.clone().unwrap();

    // Out: records published here reach Kafka through TLS and SCRAM.
    let client = Client::connect(&server.native, ClientOptions::default())
        .await
        .unwrap();
    for i in 0..30 {
        let r = PublishRecord {
            topic: "out/t".into(),
            payload: format!("out-{i}").into(),
            ..PublishRecord::default()
        };
        client.publish_acked(&r).await.unwrap();
    }
    wait_status(&http, "out", "the bridge out to drain", |s| {
        s["state"] == "running" && s["lag_records"] == 0 && s["records"] == 30
    })
    .await;
    let got: Vec<String> = kafka
        .read_all("edge-secure")
        .into_iter()
        .map(|(_, _, _, v)| v)
        .collect();
    let want: Vec<String> = (0..30).map(|i| format!("out-{i}")).collect();
    assert_eq!(got, want);

    // In: the topic's records come into the stream through TLS and PLAIN, and the group's
    // offset (committed over the bridge's own TLS and SASL connection) reaches Kafka.
    let mut consumer = client
        .consumer(
            "default",
            ConsumerOptions {
                filter: "in-topic".into(),
                start: StartPosition::Earliest,
                ack_timeout: None,
                ..ConsumerOptions::default()
            },
        )
        .await
        .unwrap();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    while seen.len() < 20 && Instant::now() < deadline {
        for m in consumer
            .fetch(100, Duration::from_millis(200))
            .await
            .unwrap()
        {
            seen.push(String::from_utf8_lossy(&m.payload).to_string());
        }
    }
    let want: Vec<String> = (0..20).map(|i| format!("in-{i}")).collect();
    assert_eq!(seen, want);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if kafka.committed("edge-g", "in-topic").get(&0) == Some(&20) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the group's offset was not committed"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // The others never get in, and say why.
    let error_has = |what: &'static str| {
        move |s: &Value| s["last_error"].as_str().is_some_and(|e| e.contains(what))
    };
    wait_status(
        &http,
        "wrong-password",
        "the wrong password's error",
        error_has("uthentication"),
    )
    .await;
    wait_status(
        &http,
        "other-ca",
        "the other CA's error",
        error_has("not signed by a CA of the CA file"),
    )
    .await;
    for name in ["wrong-password", "other-ca"] {
        let s = status(&http, name).await;
        assert_eq!(s["records"], 0, "{s}");
    }
}
