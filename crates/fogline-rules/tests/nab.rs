//! The detector operator against the detector run alone: the NAB corpus replayed through
//! the broker, each file on its own stream (a stream's record times never go back, and the
//! files' times overlap), into a rule `anomaly_score(value, 'sentinel')` per file gives,
//! for every row of every file, exactly the score that
//! `fogline_detect::nab::run_detector` (what `fogline-bench detect --nab` runs) gives.
//!
//! Needs the corpus: `FOGLINE_NAB_DIR`, or `../shared/data/nab` beside the workspace;
//! without it the test says so and passes. `FOGLINE_NAB_FILES=n` replays the first n
//! files only (all 58 by default).

use std::path::PathBuf;
use std::time::Duration;

use fogline_broker::link::PublishOptions;
use fogline_broker::{Broker, BrokerConfig, ConsumerOptions, Start, StorageMode, StreamConfig};
use fogline_detect::nab::{run_detector, Corpus};
use fogline_rules::{RuleSpec, Rules};

fn corpus() -> Option<Corpus> {
    let dir = std::env::var_os("FOGLINE_NAB_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/nab")
        });
    if !dir.join("labels/combined_windows.json").exists() {
        eprintln!("NAB corpus not found at {}; skipping", dir.display());
        return None;
    }
    let mut c = Corpus::load(&dir).expect("the NAB corpus loads");
    if let Some(n) = std::env::var("FOGLINE_NAB_FILES")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        c.files.truncate(n);
    }
    Some(c)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_scores_through_a_rule_equal_the_detector_alone() {
    let Some(corpus) = corpus() else { return };
    let (want, _) = run_detector(&corpus, &|| fogline_detect::by_name("sentinel").unwrap());
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig {
        storage: StorageMode::Mmap,
        data_dir: dir.path().to_path_buf(),
        streams: vec![StreamConfig::new("scores", vec!["scores".into()])],
        ..BrokerConfig::default()
    };
    let broker: Broker = Broker::open(config).unwrap().0;
    let rules = Rules::open(broker.clone(), None, None, 100).unwrap();
    for i in 0..corpus.files.len() {
        let mut nab = StreamConfig::new(format!("nab{i}"), vec![format!("nab/{i}")]);
        nab.sql = Some(format!(
            r#"CREATE STREAM nab{i} (value FLOAT) WITH (DATASOURCE="nab/{i}", FORMAT="json")"#
        ));
        broker.create_stream(nab).unwrap();
        let spec = serde_json::json!({
            "id": format!("nab{i}"),
            "sql": format!("SELECT meta(topic) AS file, anomaly_score(value, 'sentinel') AS score FROM nab{i}"),
            "actions": [{"publish": {"topic": "scores", "sendSingle": true}}],
            "options": {"qos": 1}
        });
        rules
            .create(RuleSpec::from_json(spec.to_string().as_bytes()).unwrap())
            .unwrap();
    }
    let link = broker.link("replay");
    let opts = PublishOptions {
        acked: true,
        priority: false,
    };
    for (i, f) in corpus.files.iter().enumerate() {
        let topic = format!("nab/{i}");
        for (&t, &v) in f.timestamps.iter().zip(&f.values) {
            let body = serde_json::json!({ "value": v }).to_string();
            let block =
                fogline_wire::RecordBlock::single(t as u64 * 1_000_000, &[], body.as_bytes())
                    .unwrap();
            link.publish_block(&topic, block, opts).await.unwrap();
        }
    }
    let rows: usize = corpus.files.iter().map(|f| f.values.len()).sum();
    let mut got: Vec<Vec<f64>> = vec![Vec::new(); corpus.files.len()];
    let mut reader = link
        .consumer(
            "scores",
            ConsumerOptions {
                name: None,
                filter: None,
                start: Start::Earliest,
                ack_timeout: None,
                max_inflight: 4096,
            },
        )
        .unwrap();
    let mut seen = 0;
    while seen < rows {
        let batch = reader.fetch(4096, Duration::from_secs(60)).await.unwrap();
        assert!(!batch.is_empty(), "only {seen} of {rows} scores arrived");
        for d in batch {
            let v: serde_json::Value = serde_json::from_slice(&d.record.payload).unwrap();
            let file: usize = v["file"].as_str().unwrap()[4..].parse().unwrap();
            got[file].push(v["score"].as_f64().unwrap());
            seen += 1;
        }
    }
    for (i, f) in corpus.files.iter().enumerate() {
        assert_eq!(got[i].len(), want[i].len(), "{}: row count", f.path);
        for (row, (g, w)) in got[i].iter().zip(&want[i]).enumerate() {
            assert!(g == w, "{} row {row}: rule {g}, detector {w}", f.path);
        }
    }
    eprintln!(
        "{} files, {rows} rows: every score equal",
        corpus.files.len()
    );
    rules.shut_down().await;
}
