//! Streams and consumers managed at runtime: created, changed, purged and deleted while
//! records flow; the changes persist in the catalog across a reopen; durable consumers are
//! listed with their lag and pending acks, and deleted.

mod common;

use common::durable;

use std::time::Duration;

use bytesize::ByteSize;
use fogline_broker::{
    Batch, Broker, BrokerConfig, BrokerError, ConsumerOptions, Handoff, Start, StorageMode,
    StreamChange, StreamConfig,
};
use fogline_wire::RecordBlock;
use tokio::time::Instant;

fn config(dir: &std::path::Path, storage: StorageMode) -> BrokerConfig {
    BrokerConfig {
        storage,
        data_dir: dir.to_path_buf(),
        ..BrokerConfig::default()
    }
}

fn open(dir: &std::path::Path) -> Broker {
    Broker::open(config(dir, StorageMode::Mmap)).unwrap().0
}

fn on(broker: &Broker, topic: &str, payload: &[u8]) -> Batch {
    Batch {
        topic: topic.into(),
        records: RecordBlock::single(0, b"", payload).unwrap(),
        timestamp: 1,
        priority: false,
        origin: broker.next_origin(),
    }
}

async fn publish(broker: &Broker, topic: &str, n: u32) {
    for i in 0..n {
        broker
            .publish(on(broker, topic, &i.to_le_bytes()), Handoff::Queue)
            .await
            .unwrap();
    }
}

fn records(broker: &Broker, stream: &str) -> u64 {
    broker.stream(stream).unwrap().stats().records
}

fn names(broker: &Broker) -> Vec<String> {
    broker
        .streams()
        .iter()
        .map(|s| s.name().to_string())
        .collect()
}

#[tokio::test]
async fn a_stream_created_at_runtime_captures_at_once_and_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path());
    let mut cfg = StreamConfig::new("lab", vec!["lab/+/temp".into()]);
    cfg.storage = Some(StorageMode::Fsync);
    cfg.retention_bytes = Some(ByteSize::mib(8));
    cfg.retention_age = Some(Duration::from_secs(3600));
    broker.create_stream(cfg.clone()).unwrap();
    publish(&broker, "lab/r1/temp", 5).await;
    publish(&broker, "lab/r1/humidity", 2).await;
    assert_eq!(records(&broker, "lab"), 5);
    assert_eq!(records(&broker, "default"), 7, "default captures both");
    let err = broker.create_stream(cfg.clone()).unwrap_err();
    assert!(matches!(err, BrokerError::StreamExists(_)), "{err}");
    drop(broker);

    let broker = open(dir.path());
    assert_eq!(names(&broker), ["default", "lab"]);
    let lab = broker.stream("lab").unwrap();
    assert_eq!(lab.config(), cfg, "settings kept");
    assert_eq!(lab.storage(), StorageMode::Fsync);
    assert_eq!(
        lab.retention(),
        (Some(8 << 20), Some(Duration::from_secs(3600)))
    );
    assert_eq!(records(&broker, "lab"), 5, "records kept");
}

#[tokio::test]
async fn bad_streams_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path());
    for (name, subject) in [
        ("a/b", "x"),
        ("mqtt", "x"),
        ("node", "x"),
        (".hidden", "x"),
        ("ok", "a/#/b"),
    ] {
        let err = broker
            .create_stream(StreamConfig::new(name, vec![subject.into()]))
            .unwrap_err();
        assert!(matches!(err, BrokerError::Invalid(_)), "{name}: {err}");
    }
    let err = broker
        .create_stream(StreamConfig::new("none", vec![]))
        .unwrap_err();
    assert!(err.to_string().contains("no subjects"), "{err}");
    // A directory that is not one of this node's streams is not adopted.
    std::fs::create_dir_all(dir.path().join("stray")).unwrap();
    std::fs::write(dir.path().join("stray/00000000000000000000.log"), b"x").unwrap();
    let err = broker
        .create_stream(StreamConfig::new("stray", vec!["s/#".into()]))
        .unwrap_err();
    assert!(
        err.to_string().contains("is not a stream of this node"),
        "{err}"
    );
    assert_eq!(names(&broker), ["default"]);
}

#[tokio::test]
async fn a_memory_node_keeps_no_files_and_no_file_streams() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Broker::open(config(dir.path(), StorageMode::Memory))
        .unwrap()
        .0;
    broker
        .create_stream(StreamConfig::new("m", vec!["m/#".into()]))
        .unwrap();
    let mut cfg = StreamConfig::new("f", vec!["f/#".into()]);
    cfg.storage = Some(StorageMode::Mmap);
    let err = broker.create_stream(cfg).unwrap_err();
    assert!(err.to_string().contains("keeps no files"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn changed_subjects_route_at_once_and_changed_retention_applies() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path());
    let mut cfg = StreamConfig::new("s", vec!["a/#".into()]);
    cfg.segment_bytes = Some(ByteSize::kib(4));
    broker.create_stream(cfg).unwrap();
    publish(&broker, "a/1", 1).await;
    publish(&broker, "b/1", 1).await;
    assert_eq!(records(&broker, "s"), 1);
    let change = StreamChange {
        subjects: Some(vec!["b/#".into()]),
        ..StreamChange::default()
    };
    broker.update_stream("s", change).unwrap();
    publish(&broker, "a/1", 1).await;
    publish(&broker, "b/1", 1).await;
    assert_eq!(records(&broker, "s"), 2, "b/1 captured, a/1 no longer");

    // Enough to fill several 4 KiB segments, then a limit of 8 KiB.
    for _ in 0..200 {
        broker
            .publish(on(&broker, "b/2", &[9u8; 100]), Handoff::Queue)
            .await
            .unwrap();
    }
    let change = StreamChange {
        retention_bytes: Some(Some(ByteSize::kib(8))),
        ..StreamChange::default()
    };
    broker.update_stream("s", change).unwrap();
    assert!(
        broker.stream("s").unwrap().stats().bytes <= 12 * 1024,
        "retention applied at once"
    );
    let err = broker
        .update_stream(
            "s",
            StreamChange {
                storage: Some(StorageMode::Fsync),
                ..StreamChange::default()
            },
        )
        .unwrap_err();
    assert!(err.to_string().contains("cannot change"), "{err}");
    let err = broker
        .update_stream(
            "s",
            StreamChange {
                subjects: Some(vec![]),
                ..StreamChange::default()
            },
        )
        .unwrap_err();
    assert!(matches!(err, BrokerError::Invalid(_)), "{err}");
    assert!(matches!(
        broker.update_stream("nope", StreamChange::default()),
        Err(BrokerError::UnknownStream(_))
    ));
    drop(broker);
    let broker = open(dir.path());
    let s = broker.stream("s").unwrap();
    assert_eq!(&*s.subjects(), ["b/#".to_string()]);
    assert_eq!(s.retention().0, Some(8 * 1024));
}

#[tokio::test]
async fn a_purge_drops_the_records_and_keeps_the_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path());
    publish(&broker, "t", 10).await;
    let mut c = broker.open_consumer("default", durable("c")).unwrap();
    let got = c.poll(3, Instant::now()).unwrap();
    c.ack(&got.iter().map(|d| d.record.offset).collect::<Vec<_>>());
    drop(c);
    broker.purge_stream("default").unwrap();
    let s = broker.stream("default").unwrap();
    assert_eq!(s.stats().records, 0);
    assert_eq!(s.bounds(), (10, 10));
    publish(&broker, "t", 1).await;
    let mut c = broker.open_consumer("default", durable("c")).unwrap();
    let got = c.poll(10, Instant::now()).unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].record.offset, 10,
        "the consumer resumes past the purge"
    );
    drop(c);
    drop(s);
    drop(broker);
    let broker = open(dir.path());
    assert_eq!(broker.stream("default").unwrap().bounds(), (10, 11));
}

#[tokio::test]
async fn a_deleted_stream_is_gone_for_good_and_its_name_is_free() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path());
    broker
        .create_stream(StreamConfig::new("old", vec!["o/#".into()]))
        .unwrap();
    publish(&broker, "o/1", 3).await;
    let mut c = broker.open_consumer("old", durable("reader")).unwrap();
    assert_eq!(c.poll(1, Instant::now()).unwrap().len(), 1);
    c.ack(&[0]);
    c.save().unwrap();
    broker.delete_stream("old").unwrap();
    // Its consumer is told; routing no longer reaches it.
    assert!(matches!(
        c.poll(10, Instant::now()),
        Err(BrokerError::UnknownStream(_))
    ));
    drop(c);
    assert!(!dir.path().join("old").exists(), "its files are gone");
    assert!(matches!(
        broker.delete_stream("old"),
        Err(BrokerError::UnknownStream(_))
    ));
    publish(&broker, "o/1", 1).await;
    // A new stream of the same name starts empty, with no consumer of the old one.
    broker
        .create_stream(StreamConfig::new("old", vec!["o/#".into()]))
        .unwrap();
    assert_eq!(records(&broker, "old"), 0);
    assert!(broker.consumers(Some("old")).unwrap().is_empty());
    broker.delete_stream("old").unwrap();
    drop(broker);
    let broker = open(dir.path());
    assert_eq!(names(&broker), ["default"], "deleted for good");
    // The default stream, deleted, is not brought back by a restart.
    broker.delete_stream("default").unwrap();
    drop(broker);
    let broker = open(dir.path());
    assert!(names(&broker).is_empty());
}

#[tokio::test]
async fn a_file_edit_wins_over_the_catalog_only_for_what_it_changed() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path(), StorageMode::Mmap);
    cfg.streams = vec![
        StreamConfig::new("a", vec!["a/#".into()]),
        StreamConfig::new("b", vec!["b/#".into()]),
    ];
    let broker = Broker::open(cfg.clone()).unwrap().0;
    let change = StreamChange {
        subjects: Some(vec!["a2/#".into()]),
        ..StreamChange::default()
    };
    broker.update_stream("a", change).unwrap();
    broker.delete_stream("b").unwrap();
    drop(broker);
    let broker = Broker::open(cfg.clone()).unwrap().0;
    assert_eq!(names(&broker), ["a"], "b stays deleted");
    assert_eq!(
        &*broker.stream("a").unwrap().subjects(),
        ["a2/#".to_string()]
    );
    drop(broker);
    cfg.streams[1].subjects = vec!["b2/#".into()];
    let broker = Broker::open(cfg).unwrap().0;
    assert_eq!(names(&broker), ["a", "b"], "the edited stream comes back");
    assert_eq!(
        &*broker.stream("b").unwrap().subjects(),
        ["b2/#".to_string()]
    );
}

#[tokio::test]
async fn consumers_are_listed_with_lag_and_pending_acks_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path());
    publish(&broker, "t", 10).await;
    let mut c = broker.open_consumer("default", durable("worker")).unwrap();
    let got = c.poll(4, Instant::now()).unwrap();
    c.ack(&[got[0].record.offset]);
    let list = broker.consumers(None).unwrap();
    assert_eq!(list.len(), 1);
    let w = &list[0];
    assert_eq!(w.name.as_deref(), Some("worker"));
    assert!(w.open);
    assert_eq!(w.ack_floor, 1);
    assert_eq!(w.cursor, Some(4));
    assert_eq!(w.pending_acks, 3);
    assert_eq!(w.lag, 9);
    assert_eq!(w.delivered, 4);
    // An ephemeral consumer is listed while open.
    let e = broker
        .open_consumer(
            "default",
            ConsumerOptions {
                name: None,
                filter: Some("t".into()),
                start: Start::Latest,
                ack_timeout: None,
                max_inflight: 10,
            },
        )
        .unwrap();
    let list = broker.consumers(Some("default")).unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[1].name, None);
    assert_eq!(list[1].filter.as_deref(), Some("t"));
    drop(e);
    assert!(matches!(
        broker.delete_consumer("default", "worker"),
        Err(BrokerError::ConsumerInUse(_))
    ));
    c.save().unwrap();
    drop(c);
    let w = broker.consumer_info("default", "worker").unwrap();
    assert!(!w.open);
    assert_eq!((w.ack_floor, w.lag, w.pending_acks), (1, 9, 0));
    broker.sync_positions();
    assert!(dir.path().join("default/consumers/worker").exists());
    broker.delete_consumer("default", "worker").unwrap();
    assert!(!dir.path().join("default/consumers/worker").exists());
    assert!(matches!(
        broker.consumer_info("default", "worker"),
        Err(BrokerError::UnknownConsumer(_))
    ));
    assert!(matches!(
        broker.delete_consumer("default", "worker"),
        Err(BrokerError::UnknownConsumer(_))
    ));
    drop(broker);
    let broker = open(dir.path());
    assert!(
        broker.consumers(None).unwrap().is_empty(),
        "deleted for good"
    );
    // A deleted consumer's name starts over from the beginning.
    let mut c = broker.open_consumer("default", durable("worker")).unwrap();
    assert_eq!(c.poll(1, Instant::now()).unwrap()[0].record.offset, 0);
}

#[tokio::test]
async fn a_damaged_catalog_stops_the_open_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path()));
    std::fs::write(dir.path().join("node/streams.json"), b"{").unwrap();
    let err = Broker::open(config(dir.path(), StorageMode::Mmap))
        .err()
        .expect("refused");
    assert!(err.to_string().contains("streams.json"), "{err}");
}

#[tokio::test]
async fn leftovers_of_an_interrupted_delete_are_removed_at_open() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path()));
    let trash = dir.path().join("node/trash/x.1");
    std::fs::create_dir_all(&trash).unwrap();
    std::fs::write(trash.join("00000000000000000000.log"), b"old").unwrap();
    drop(open(dir.path()));
    assert!(!dir.path().join("node/trash").exists());
}
