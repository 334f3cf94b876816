//! `[[bridge.kafka_in]]` against a real Kafka (KRaft, one node, started and stopped here with
//! `bench/peers/start.sh` from the jars `bench/peers/install.sh kafka` installs): records
//! produced to a topic of three partitions are consumed into fogline; fogline is killed with
//! SIGKILL while it consumes, before it committed anything, and started again. The stream then
//! holds every record exactly once with its Kafka origin, and the group's committed offsets,
//! read with Kafka's own `kafka-consumer-groups` tool, reach the end of every partition.
//!
//! Without Kafka's jars or java the test is skipped with a reason, unless
//! `FOGLINE_TEST_KAFKA=1` (scripts/test.sh) makes that a failure.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use fogline_client::{Client, ClientOptions, ConsumerOptions, Headers, StartPosition};
use rskafka::record::Record;
use support::kafka::Kafka;

const TOPIC: &str = "kin.test";
const PARTITIONS: i32 = 3;
/// Records produced before the first start.
const FIRST: usize = 1500;
/// Records produced while it runs: fogline is killed as soon as it stored one of them.
const ALL: usize = 7500;
const GROUP: &str = "fogline-kin-test";

fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.unwrap().as_millis() as i64
}

/// Record `i`: partition `i % 3`, key `k{i}`, value `v{i}`, header `n` = `i`.
fn record(i: usize) -> Record {
    Record {
        key: Some(format!("k{i}").into_bytes()),
        value: Some(format!("v{i}").into_bytes()),
        headers: BTreeMap::from([("n".to_string(), i.to_string().into_bytes())]),
        timestamp: chrono::DateTime::from_timestamp_millis(now_ms()).unwrap(),
    }
}

/// Produces records `from..to`, each partition's share in order.
async fn produce(kafka: &Kafka, from: usize, to: usize) {
    for p in 0..PARTITIONS {
        let mine = (from..to).filter(|i| i % 3 == p as usize).map(record);
        kafka.produce(TOPIC, p, mine.collect()).await;
    }
}

fn write_config(path: &Path, addr: &str, commit_interval: &str) {
    std::fs::write(
        path,
        format!(
            "[[bridge.kafka_in]]\nname = \"kin\"\nbootstrap = [\"{addr}\"]\ntopics = [\"{TOPIC}\"]\n\
             group = \"{GROUP}\"\nbatch_records = 40\nbatch_bytes = \"2 KiB\"\n\
             fetch_wait = \"100ms\"\ncommit_interval = \"{commit_interval}\"\n"
        ),
    )
    .unwrap();
}

fn serve(dir: &Path) -> support::Served {
    support::serve([
        "--config",
        dir.join("fogline.toml").to_str().unwrap(),
        "--data-dir",
        dir.join("data").to_str().unwrap(),
    ])
}

/// Waits (bounded) until the default stream holds at least `n` records; returns how many.
async fn wait_stored(native: &str, n: u64, within: Duration) -> u64 {
    let client = Client::connect(native, ClientOptions::default())
        .await
        .unwrap();
    let until = Instant::now() + within;
    loop {
        let got = client.stream_info("default").await.unwrap().records;
        if got >= n || Instant::now() > until {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Every record of the default stream: (partition, Kafka offset) -> record number.
async fn read_stream(native: &str) -> Vec<(i32, i64, usize)> {
    let client = Client::connect(native, ClientOptions::default())
        .await
        .unwrap();
    let opts = ConsumerOptions {
        start: StartPosition::Earliest,
        ack_timeout: None,
        ..ConsumerOptions::default()
    };
    let total = client.stream_info("default").await.unwrap().records;
    let mut consumer = client.consumer("default", opts).await.unwrap();
    let mut out = Vec::new();
    let until = Instant::now() + Duration::from_secs(30);
    while (out.len() as u64) < total && Instant::now() < until {
        for r in consumer.fetch(1000, Duration::from_secs(1)).await.unwrap() {
            assert_eq!(&r.topic[..], "kin/test");
            let h = Headers::parse(r.headers.clone()).unwrap();
            let get = |k: &str| {
                String::from_utf8(h.get(k).unwrap_or_else(|| panic!("header {k}")).to_vec())
                    .unwrap()
            };
            assert_eq!(get("kafka-topic"), TOPIC);
            let i: usize = get("n").parse().unwrap();
            assert_eq!(get("kafka-key"), format!("k{i}"));
            assert_eq!(&r.payload[..], format!("v{i}").as_bytes());
            let p: i32 = get("kafka-partition").parse().unwrap();
            assert_eq!(p as usize, i % 3);
            out.push((p, get("kafka-offset").parse().unwrap(), i));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumed_once_across_kill_9_and_committed() {
    let kdir = tempfile::tempdir().unwrap();
    let Some(kafka) = Kafka::start(kdir.path()) else {
        return;
    };
    kafka.create_topic(TOPIC, PARTITIONS).await;
    produce(&kafka, 0, FIRST).await;

    // First run: offsets are committed only after an hour, so at the kill nothing is, and
    // resuming rests on what the stream holds.
    let dir = tempfile::tempdir().unwrap();
    write_config(&dir.path().join("fogline.toml"), &kafka.bootstrap, "1h");
    let mut server = serve(dir.path());
    let got = wait_stored(&server.native, FIRST as u64, Duration::from_secs(60)).await;
    assert_eq!(got, FIRST as u64, "the first records were consumed");
    let killed = async {
        let at_kill = wait_stored(&server.native, FIRST as u64 + 1, Duration::from_secs(30)).await;
        server.kill();
        at_kill
    };
    let ((), at_kill) = tokio::join!(produce(&kafka, FIRST, ALL), killed);
    eprintln!("killed with {at_kill} of {ALL} records stored");
    let committed = kafka.committed(GROUP, TOPIC);
    assert!(committed.values().all(|&o| o == 0), "{committed:?}");

    // Second run: commits every 200 ms.
    write_config(&dir.path().join("fogline.toml"), &kafka.bootstrap, "200ms");
    let server = serve(dir.path());
    let all = ALL as u64;
    wait_stored(&server.native, all, Duration::from_secs(60)).await;
    // More would show up within a few fetches if anything were consumed twice.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let records = read_stream(&server.native).await;
    let mut seen: HashMap<(i32, i64), usize> = HashMap::new();
    for &(p, o, i) in &records {
        assert!(seen.insert((p, o), i).is_none(), "{p}/{o} stored twice");
    }
    let mut numbers: Vec<usize> = records.iter().map(|r| r.2).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (0..ALL).collect::<Vec<_>>(), "each record once");

    let http = server.http.clone().unwrap();
    let until = Instant::now() + Duration::from_secs(60);
    let mut committed = HashMap::new();
    while Instant::now() < until {
        committed = kafka.committed(GROUP, TOPIC);
        if committed.values().sum::<i64>() == all as i64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let want: HashMap<i32, i64> = (0..PARTITIONS).map(|p| (p, ALL as i64 / 3)).collect();
    assert_eq!(
        committed, want,
        "committed offsets reach each partition's end"
    );

    let status = support::admin(&http, "GET", "/api/v1/bridges/kin", None).await;
    assert_eq!(status["kind"], "kafka_in");
    assert_eq!(status["state"], "running");
    assert_eq!(status["lag_records"], 0);
    // The second run found what the first stored (none of it committed) and stored the rest.
    let skipped = status["skipped"].as_u64().unwrap();
    assert!(skipped >= at_kill, "{status}");
    assert_eq!(
        status["records"].as_u64().unwrap() + skipped,
        all,
        "{status}"
    );
    drop(server);
    drop(kafka);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_stops_promptly_while_kafka_is_unreachable() {
    let kdir = tempfile::tempdir().unwrap();
    let Some(kafka) = Kafka::start(kdir.path()) else {
        return;
    };
    kafka.create_topic(TOPIC, PARTITIONS).await;
    produce(&kafka, 0, 30).await;
    let dir = tempfile::tempdir().unwrap();
    write_config(&dir.path().join("fogline.toml"), &kafka.bootstrap, "300ms");
    let mut server = serve(dir.path());
    wait_stored(&server.native, 30, Duration::from_secs(60)).await;
    // Kafka cut off: fetches and the periodic commit get no answer.
    let Some(_cut) = support::kafka::Partition::cut(kafka.port()) else {
        return;
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    let took = server.terminate(Duration::from_secs(40));
    // The final commit is bounded at 5 s; a commit in flight is given up at once.
    assert!(
        took.is_some_and(|t| t < Duration::from_secs(8)),
        "the node took {took:?} to stop (the coordinator timeout is 15 s)"
    );
}
