//! Retention holds on a stream: records a holder has not taken are never dropped; past the
//! hold margin the stream refuses publishes (`BrokerError::Held`) instead, and takes them
//! again once the holder moves on or lets go. Memory and file storage alike.

use bytesize::ByteSize;
use fogline_broker::{
    Batch, Broker, BrokerConfig, BrokerError, Handoff, StorageMode, Stream, StreamConfig,
};
use fogline_wire::RecordBlock;
use std::sync::Arc;

const PAYLOAD: usize = 1000;

/// A broker with one stream `s` on `t`: 4 KiB segments, 8 KiB retention, and a hold margin
/// of `hold_max`.
fn open(dir: &std::path::Path, storage: StorageMode, hold_max: u64) -> (Broker, Arc<Stream>) {
    let mut stream = StreamConfig::new("s", vec!["t".into()]);
    stream.retention_bytes = Some(ByteSize::kib(8));
    stream.segment_bytes = Some(ByteSize::kib(4));
    let config = BrokerConfig {
        storage,
        data_dir: dir.to_path_buf(),
        retention_hold_max: ByteSize::b(hold_max),
        streams: vec![stream],
        ..BrokerConfig::default()
    };
    let broker = Broker::open(config).unwrap().0;
    let s = broker.stream("s").unwrap();
    (broker, s)
}

async fn publish(broker: &Broker) -> Result<(), BrokerError> {
    let batch = Batch {
        topic: "t".into(),
        records: RecordBlock::single(0, b"", &[7u8; PAYLOAD]).unwrap(),
        // Now, so the broker's default age limit (7 days) drops nothing.
        timestamp: fogline_broker::now_micros(),
        priority: false,
        origin: broker.next_origin(),
    };
    broker.publish(batch, Handoff::Queue).await
}

/// Publishes until the stream refuses; returns how many it took.
async fn fill_until_refused(broker: &Broker) -> u64 {
    for n in 0..1000 {
        match publish(broker).await {
            Ok(()) => {}
            Err(BrokerError::Held {
                stream, holders, ..
            }) => {
                assert_eq!((stream.as_str(), holders.as_str()), ("s", "bridge-a"));
                return n;
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
    panic!("never refused");
}

#[tokio::test]
async fn a_held_stream_keeps_every_record_and_refuses_past_the_margin() {
    for storage in [StorageMode::Memory, StorageMode::Mmap] {
        let dir = tempfile::tempdir().unwrap();
        let (broker, s) = open(dir.path(), storage, 6 << 10);
        let hold = s.hold_retention("bridge-a");
        assert_eq!(hold.offset(), 0);
        let taken = fill_until_refused(&broker).await;
        // 8 KiB retained plus 6 KiB held, give or take a segment.
        assert!((12..=24).contains(&taken), "{storage:?}: took {taken}");
        assert_eq!(s.bounds(), (0, taken), "{storage:?}: nothing dropped");
        let info = s.hold_info().unwrap();
        assert!(info.full && info.held_bytes > info.max_bytes, "{info:?}");
        assert_eq!(
            info.max_bytes,
            6 << 10,
            "the broker's margin, under the stream's 8 KiB"
        );
        assert_eq!(info.refused_records, 1);
        assert_eq!(info.holders[0].name, "bridge-a");
        // Refused again while the holder stays put.
        assert!(matches!(
            publish(&broker).await,
            Err(BrokerError::Held { .. })
        ));
        assert_eq!(s.hold_refused(), 2);

        // The holder forwarded everything: retention catches up and records are taken.
        hold.set(taken);
        assert!(!s.hold_full(), "{storage:?}");
        assert!(
            s.bounds().0 > 0,
            "{storage:?}: retention dropped what was taken"
        );
        publish(&broker).await.unwrap();

        // Held again, then let go: records are taken again.
        let taken2 = fill_until_refused(&broker).await;
        assert!(taken2 > 0);
        drop(hold);
        assert!(!s.hold_full());
        assert!(s.hold_info().unwrap().holders.is_empty());
        for _ in 0..40 {
            publish(&broker).await.unwrap();
        }
    }
}

/// Retention drops only what every holder has taken.
#[tokio::test]
async fn the_lowest_holder_pins_retention() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, s) = open(dir.path(), StorageMode::Mmap, 1 << 30);
    let a = s.hold_retention("a");
    let b = s.hold_retention("b");
    // About 14 KiB in 3-record segments: 6 KiB past retention, within the 8 KiB margin.
    for _ in 0..14 {
        publish(&broker).await.unwrap();
    }
    a.set(10);
    b.set(4);
    broker.enforce_retention();
    let first = s.bounds().0;
    assert!(first > 0 && first <= 4, "first {first}");
    drop(b);
    let first = s.bounds().0;
    assert!(first > 4 && first <= 10, "first {first}");
    assert_eq!(s.read(10, 1, usize::MAX).unwrap()[0].offset, 10);
    drop(a);
    assert_eq!(s.held_bytes(), 0);
}

/// A margin of zero refuses as soon as retention would drop a held record; with no hold
/// the same stream never refuses.
#[tokio::test]
async fn zero_margin_refuses_at_once_and_no_hold_never_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, s) = open(dir.path(), StorageMode::Memory, 0);
    for _ in 0..100 {
        publish(&broker).await.unwrap();
    }
    assert!(s.hold_info().is_none());
    let first = s.bounds().1;
    let _hold = s.hold_retention("bridge-a");
    assert_eq!(_hold.offset(), s.bounds().0);
    let taken = fill_until_refused(&broker).await;
    assert!(taken > 0 && taken <= 12, "took {taken} after {first}");
}
