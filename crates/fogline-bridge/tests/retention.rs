//! What a Kafka bridge does when Kafka is away longer than its stream's retention allows:
//! `hold` keeps every record not yet forwarded and, past the hold margin, the stream refuses
//! publishes; `drop` lets retention drop them, counted.

use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use bytesize::ByteSize;
use fogline_bridge::config::OnRetention;
use fogline_bridge::kafka::out::KafkaOut;
use fogline_bridge::KafkaOutConfig;
use fogline_broker::{Batch, Broker, BrokerConfig, BrokerError, StorageMode, StreamConfig};
use fogline_wire::RecordBlock;

fn broker(dir: &std::path::Path) -> Broker {
    let mut stream = StreamConfig::new("s", vec!["t".into()]);
    stream.retention_bytes = Some(ByteSize::kib(8));
    stream.segment_bytes = Some(ByteSize::kib(4));
    let config = BrokerConfig {
        storage: StorageMode::Mmap,
        data_dir: dir.to_path_buf(),
        retention_hold_max: ByteSize::kib(8),
        streams: vec![stream],
        ..BrokerConfig::default()
    };
    Broker::open(config).unwrap().0
}

fn publish(b: &Broker) -> Result<u64, BrokerError> {
    let batch = Batch {
        topic: "t".into(),
        records: RecordBlock::single(0, b"", &[7u8; 1000]).unwrap(),
        timestamp: fogline_broker::now_micros(),
        priority: false,
        origin: b.next_origin(),
    };
    let next = b.stream("s").unwrap().append(&batch)?;
    b.enforce_retention();
    Ok(next)
}

/// A bridge to a Kafka that is not there, running.
fn bridge(b: &Broker, policy: OnRetention) -> (KafkaOut, tokio::sync::watch::Sender<bool>) {
    let cfg = KafkaOutConfig {
        on_retention: policy,
        ..KafkaOutConfig::new("s", vec!["127.0.0.1:1".into()])
    };
    let out = KafkaOut::new("core", cfg, "edge", b.clone(), None).unwrap();
    (out, tokio::sync::watch::channel(false).0)
}

#[tokio::test]
async fn hold_keeps_every_record_and_then_refuses_publishers() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path());
    let (out, stop) = bridge(&b, OnRetention::Hold);
    let status = out.status();
    let task = tokio::spawn(out.run(stop.subscribe()));
    let mut taken = 0;
    let refused = loop {
        match publish(&b) {
            Ok(_) => taken += 1,
            Err(e) => break e,
        }
        assert!(taken < 1000, "never refused");
    };
    assert!(matches!(refused, BrokerError::Held { .. }), "{refused}");
    // Retention (8 KiB) alone would have dropped most of them: the hold kept all.
    assert!(taken > 8, "{taken}");
    let (first, next) = b.stream("s").unwrap().bounds();
    assert_eq!((first, next), (0, taken));
    assert_eq!(status.dropped.load(Relaxed), 0);
    stop.send(true).unwrap();
    task.await.unwrap();
}

#[tokio::test]
async fn drop_lets_retention_drop_and_counts_it() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path());
    let (out, stop) = bridge(&b, OnRetention::Drop);
    let status = out.status();
    let task = tokio::spawn(out.run(stop.subscribe()));
    for _ in 0..100 {
        publish(&b).unwrap();
    }
    let (first, _) = b.stream("s").unwrap().bounds();
    assert!(first > 0, "retention dropped nothing");
    let deadline = Instant::now() + Duration::from_secs(20);
    while status.dropped.load(Relaxed) < first {
        assert!(Instant::now() < deadline, "{:?}", status.snapshot());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status.dropped.load(Relaxed), first);
    assert_eq!(status.snapshot().lag_records, 100 - first);
    stop.send(true).unwrap();
    task.await.unwrap();
}
