//! A batch the log cannot take whole is refused whole: when the segment roll it needs fails
//! (here the stream's directory is gone, so the seal cannot write its index; a full disk does
//! the same), none of its records is readable, in that stream or in another that captures
//! the topic too, and the publisher's retry, once the disk works again, stores each record
//! once.

use bytesize::ByteSize;
use fogline_broker::{Batch, Broker, BrokerConfig, Handoff, StorageMode, StreamConfig};
use fogline_wire::RecordBlock;

fn batch(broker: &Broker, payloads: &[Vec<u8>]) -> Batch {
    let records = payloads.iter().map(|p| (0u64, &b""[..], &p[..]));
    Batch {
        topic: "t".into(),
        records: RecordBlock::from_records(records).unwrap(),
        timestamp: 1,
        priority: false,
        origin: broker.next_origin(),
    }
}

/// Three records of 1,037 bytes (36 + topic + payload): 985 of a 4 KiB segment left.
async fn fill_three(broker: &Broker) {
    for i in 0..3u8 {
        let one = batch(broker, &[vec![i; 1000]]);
        broker.publish(one, Handoff::Queue).await.unwrap();
    }
}

/// Three records of 437 bytes: after `fill_three` two fit a 4 KiB segment, the third needs
/// a new one.
fn retried() -> Vec<Vec<u8>> {
    (0..3u8).map(|i| vec![10 + i; 400]).collect()
}

/// Publishes `payloads` while the stream directory `dir` is gone (its roll cannot seal the
/// full segment's index or create the next one): refused. Then puts the directory back.
async fn refused_while_gone(broker: &Broker, dir: &std::path::Path, payloads: &[Vec<u8>]) {
    std::fs::remove_dir_all(dir).unwrap();
    let refused = broker
        .publish(batch(broker, payloads), Handoff::Queue)
        .await;
    assert!(
        refused.is_err(),
        "the roll cannot seal the full segment (its index) or create the next"
    );
    std::fs::create_dir(dir).unwrap();
}

/// Every readable record (a read stops at the end of a segment).
fn read_all(stream: &fogline_broker::Stream) -> Vec<fogline_log::Record> {
    let mut out = Vec::new();
    loop {
        let next = out.len() as u64;
        let got = stream.read(next, 100, usize::MAX).unwrap();
        if got.is_empty() {
            return out;
        }
        out.extend(got);
    }
}

#[tokio::test]
async fn a_batch_cut_by_a_failed_roll_leaves_nothing_behind() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let config = BrokerConfig {
        storage: StorageMode::Mmap,
        data_dir: data.clone(),
        segment_bytes: ByteSize::kib(4),
        ..BrokerConfig::default()
    };
    let broker = Broker::open(config).unwrap().0;
    fill_three(&broker).await;
    // Of these three (437 bytes each) two fit; the third needs a new segment.
    let payloads = retried();
    refused_while_gone(&broker, &data.join("default"), &payloads).await;
    let stream = broker.stream("default").unwrap();
    assert_eq!(
        read_all(&stream).len(),
        3,
        "no record of the refused batch is readable"
    );

    broker
        .publish(batch(&broker, &payloads), Handoff::Queue)
        .await
        .unwrap();
    let got = read_all(&stream);
    let tail: Vec<&[u8]> = got[3..].iter().map(|r| &r.payload[..]).collect();
    let want: Vec<&[u8]> = payloads.iter().map(|p| &p[..]).collect();
    assert_eq!(tail, want, "the retried batch, each record once");
}

/// A topic two streams capture: the second cannot take the batch (its roll fails), so the
/// first must not keep it either; the retry then stores it once in each.
#[tokio::test]
async fn a_batch_refused_by_one_stream_is_in_none() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    let stream = |name: &str, subject: &str, segment: ByteSize| StreamConfig {
        name: name.into(),
        subjects: vec![subject.into()],
        storage: None,
        retention_bytes: None,
        retention_age: None,
        segment_bytes: Some(segment),
        sql: None,
    };
    let config = BrokerConfig {
        storage: StorageMode::Mmap,
        data_dir: data.clone(),
        streams: vec![
            stream("roomy", "t", ByteSize::kib(64)),
            stream("tight", "#", ByteSize::kib(4)),
        ],
        ..BrokerConfig::default()
    };
    let broker = Broker::open(config).unwrap().0;
    fill_three(&broker).await;
    // "roomy" has room for the batch; "tight" needs a new segment, which cannot be created.
    let payloads = retried();
    refused_while_gone(&broker, &data.join("tight"), &payloads).await;
    for name in ["roomy", "tight"] {
        let got = read_all(&broker.stream(name).unwrap());
        assert_eq!(got.len(), 3, "{name}: no record of the refused batch");
    }

    broker
        .publish(batch(&broker, &payloads), Handoff::Queue)
        .await
        .unwrap();
    let want: Vec<&[u8]> = payloads.iter().map(|p| &p[..]).collect();
    for name in ["roomy", "tight"] {
        let got = read_all(&broker.stream(name).unwrap());
        let tail: Vec<&[u8]> = got[3..].iter().map(|r| &r.payload[..]).collect();
        assert_eq!(tail, want, "{name}: the retried batch, each record once");
    }
}
