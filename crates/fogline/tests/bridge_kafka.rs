//! The Kafka bridge against a real Kafka: records published while Kafka is stopped, fogline
//! killed with SIGKILL in the middle of forwarding and started again, and Kafka killed and
//! started again, arrive in Kafka each exactly once and in order (read back by kcat); keys
//! land in the partitions Kafka's own producer picks.

mod support;

use std::time::{Duration, Instant};

use fogline_client::{Client, ClientOptions, PublishRecord};
use serde_json::Value;
use support::kafka::{Kafka, Partition};

fn serve(dir: &std::path::Path, bootstrap: &str, extra: &str) -> support::Served {
    let config = dir.join("fogline.toml");
    std::fs::write(
        &config,
        format!(
            "[node]\nid = \"edge-1\"\n\n[[bridge.kafka]]\nname = \"core\"\nbootstrap = [\"{bootstrap}\"]\n\
             stream = \"default\"\nretry_max = \"1s\"\n{extra}"
        ),
    )
    .unwrap();
    support::serve([
        "--config",
        config.to_str().unwrap(),
        "--data-dir",
        dir.join("data").to_str().unwrap(),
    ])
}

async fn bridge(http: &str) -> Value {
    support::admin(http, "GET", "/api/v1/bridges/core", None).await
}

/// Waits until the bridge has nothing left to forward (and is running).
async fn drained(http: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let b = bridge(http).await;
        if b["state"] == "running" && b["lag_records"] == 0 {
            return b;
        }
        assert!(Instant::now() < deadline, "the bridge did not drain: {b}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn publish(native: &str, from: usize, to: usize) {
    let client = Client::connect(native, ClientOptions::default())
        .await
        .unwrap();
    for i in from..to {
        let record = PublishRecord {
            topic: format!("site/{}/temp", i % 3),
            payload: format!("rec-{i}").into(),
            ..PublishRecord::default()
        };
        client.publish_acked(&record).await.unwrap();
    }
}

/// The outage the tests hold (30 s unless `FOGLINE_TEST_OUTAGE_S` says otherwise).
fn outage() -> Duration {
    let s = std::env::var("FOGLINE_TEST_OUTAGE_S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    Duration::from_secs(s)
}

/// Checks that Kafka holds exactly `rec-0` .. `rec-{n-1}`, in order.
fn exactly(kafka: &Kafka, topic: &str, n: usize) {
    let got = numbers(kafka, topic);
    let want: Vec<usize> = (0..n).collect();
    if got != want {
        let distinct = got.iter().collect::<std::collections::BTreeSet<_>>().len();
        let first_bad = got.iter().zip(&want).position(|(a, b)| a != b);
        panic!(
            "Kafka holds {} records ({} duplicates, {} missing), first out of place at {first_bad:?}",
            got.len(),
            got.len() - distinct,
            n.saturating_sub(distinct)
        );
    }
}

/// The payload numbers Kafka holds, in the order of its single partition.
fn numbers(kafka: &Kafka, topic: &str) -> Vec<usize> {
    kafka
        .read_all(topic)
        .into_iter()
        .map(|(p, _, _, payload)| {
            assert_eq!(p, 0);
            payload.strip_prefix("rec-").unwrap().parse().unwrap()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_record_reaches_kafka_once_and_in_order_across_outages_and_kill_9() {
    let kdir = tempfile::tempdir().unwrap();
    let Some(kafka) = Kafka::start(kdir.path()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Small batches, so that a kill lands between acknowledged requests.
    let cfg = "topic = \"edge-test\"\nkey = \"none\"\nbatch_records = 50\n";
    let mut server = serve(dir.path(), &kafka.bootstrap, cfg);
    let http = server.http.clone().unwrap();
    publish(&server.native, 0, 500).await;
    drained(&http, Duration::from_secs(60)).await;

    // Kafka stopped: records are acknowledged by fogline and wait in the stream.
    kafka.stop();
    let down = Instant::now();
    publish(&server.native, 500, 6000).await;
    while down.elapsed() < outage() {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let b = bridge(&http).await;
    assert_eq!(b["state"], "down", "{b}");
    assert!(b["lag_records"].as_u64().unwrap() >= 5500, "{b}");
    assert!(b["lag_seconds"].as_f64().unwrap() >= 1.0, "{b}");

    // Kafka back; fogline killed while it forwards the backlog.
    kafka.restart();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let b = bridge(&http).await;
        let sent = b["records"].as_u64().unwrap();
        if sent > 500 {
            assert!(
                b["lag_records"].as_u64().unwrap() > 0,
                "too late to kill: {b}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "nothing forwarded after Kafka came back: {b}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.kill();
    // Its saved position lost too: the bridge starts from the stream's first record and
    // must learn from Kafka what it already holds.
    std::fs::remove_file(dir.path().join("data/.bridge/core.pos")).unwrap();

    let mut server = serve(dir.path(), &kafka.bootstrap, cfg);
    let http = server.http.clone().unwrap();
    publish(&server.native, 6000, 7000).await;
    let b = drained(&http, Duration::from_secs(120)).await;
    assert!(
        b["skipped"].as_u64().unwrap() > 500,
        "nothing read back: {b}"
    );

    // Kafka killed (SIGKILL) and started again while more records come.
    kafka.kill();
    publish(&server.native, 7000, 8000).await;
    kafka.restart();
    drained(&http, Duration::from_secs(120)).await;
    server.kill();

    exactly(&kafka, "edge-test", 8000);
    // Origin headers on every record.
    let one = &kafka.read_all("edge-test")[1234];
    assert!(one.2.contains("fogline-node=edge-1"), "{one:?}");
    assert!(one.2.contains("fogline-stream=default"), "{one:?}");
    assert!(one.2.contains("fogline-offset=1234"), "{one:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_go_to_the_partitions_kafkas_producer_picks() {
    let kdir = tempfile::tempdir().unwrap();
    let Some(kafka) = Kafka::start(kdir.path()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg =
        "topic = \"t.{topic}\"\ntopic_separator = \"-\"\nkey = \"header:device\"\npartitions = 4\n";
    let server = serve(dir.path(), &kafka.bootstrap, cfg);
    let http = server.http.clone().unwrap();
    let client = Client::connect(&server.native, ClientOptions::default())
        .await
        .unwrap();
    let devices: Vec<String> = (0..40).map(|i| format!("device-{i}")).collect();
    for d in &devices {
        let headers = fogline_wire::HeadersBuilder::new()
            .add("device", d.as_str())
            .add("unit", "C")
            .finish()
            .unwrap();
        let record = PublishRecord {
            topic: "site/a".into(),
            headers,
            payload: d.clone().into(),
            ..PublishRecord::default()
        };
        client.publish_acked(&record).await.unwrap();
    }
    drained(&http, Duration::from_secs(60)).await;
    let ours = kafka.read_all("t.site-a");
    assert_eq!(ours.len(), devices.len());
    // The same keys produced into the same four partitions by librdkafka with Kafka's Java
    // partitioner: each key must land where fogline put it.
    let lines: String = devices.iter().map(|d| format!("{d}\t{d}\n")).collect();
    kafka.produce_keyed("t.site-a", &lines);
    let all = kafka.read_all("t.site-a");
    for d in &devices {
        let at: Vec<i32> = all
            .iter()
            .filter(|(_, k, _, _)| k == d)
            .map(|(p, _, _, _)| *p)
            .collect();
        assert_eq!(at.len(), 2, "{d}: {at:?}");
        assert_eq!(
            at[0], at[1],
            "{d}: fogline and librdkafka disagree on the partition"
        );
    }
    let spread: std::collections::BTreeSet<i32> = ours.iter().map(|r| r.0).collect();
    assert!(spread.len() > 1, "all keys in one partition: {spread:?}");
    // A record larger than Kafka takes (its message.max.bytes is 10 MiB here) is dropped,
    // counted and logged; the records after it go on.
    for (size, name) in [(11 << 20, "huge"), (10, "after")] {
        let headers = fogline_wire::HeadersBuilder::new()
            .add("device", name)
            .finish()
            .unwrap();
        let record = PublishRecord {
            topic: "site/b".into(),
            headers,
            payload: vec![b'x'; size].into(),
            ..PublishRecord::default()
        };
        client.publish_acked(&record).await.unwrap();
    }
    let b = drained(&http, Duration::from_secs(60)).await;
    assert_eq!(b["dropped"], 1, "{b}");
    let after = kafka.read_all("t.site-b");
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0].1, "after");
    // Record headers are carried next to the origin.
    assert!(ours[0].2.contains("unit=C"), "{:?}", ours[0]);
    assert!(ours[0].2.contains("device=device-"), "{:?}", ours[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_partition_heals_without_loss_or_duplicates() {
    let kdir = tempfile::tempdir().unwrap();
    let Some(kafka) = Kafka::start(kdir.path()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = "topic = \"edge-part\"\nkey = \"none\"\nbatch_records = 50\n";
    let server = serve(dir.path(), &kafka.bootstrap, cfg);
    let http = server.http.clone().unwrap();
    publish(&server.native, 0, 500).await;
    drained(&http, Duration::from_secs(60)).await;
    let Some(cut) = Partition::cut(kafka.port()) else {
        return;
    };
    // Packets to and from Kafka vanish: the request in flight waits, nothing is resent.
    let started = Instant::now();
    publish(&server.native, 500, 3000).await;
    while started.elapsed() < outage() {
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let b = bridge(&http).await;
    assert!(b["lag_records"].as_u64().unwrap() > 0, "{b}");
    drop(cut);
    // TCP retransmits with backoff: the held request may take a while to go through.
    drained(&http, Duration::from_secs(180)).await;
    exactly(&kafka, "edge-part", 3000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_stops_promptly_while_kafka_is_unreachable() {
    let kdir = tempfile::tempdir().unwrap();
    let Some(kafka) = Kafka::start(kdir.path()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut server = serve(dir.path(), &kafka.bootstrap, "");
    let http = server.http.clone().unwrap();
    publish(&server.native, 0, 3).await;
    drained(&http, Duration::from_secs(60)).await;
    let Some(_cut) = Partition::cut(kafka.port()) else {
        return;
    };
    // A topic Kafka has not seen: the bridge asks Kafka about it, and no answer comes.
    let client = Client::connect(&server.native, ClientOptions::default())
        .await
        .unwrap();
    let record = PublishRecord {
        topic: "site/new/temp".into(),
        payload: "late".into(),
        ..PublishRecord::default()
    };
    client.publish_acked(&record).await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let took = server.terminate(Duration::from_secs(30));
    assert!(
        took.is_some_and(|t| t < Duration::from_secs(4)),
        "the node took {took:?} to stop (the metadata timeout is 15 s)"
    );
}
