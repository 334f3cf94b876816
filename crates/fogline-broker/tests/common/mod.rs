//! Helpers shared by the broker's integration tests.

use std::time::Duration;

use fogline_broker::{Batch, Broker, BrokerConfig, ConsumerOptions, Start, StorageMode};
use fogline_wire::RecordBlock;

/// A broker keeping its streams in `dir` with `storage`.
#[allow(dead_code)] // not every test binary uses it
pub fn broker(dir: &std::path::Path, storage: StorageMode) -> Broker {
    let config = BrokerConfig {
        storage,
        data_dir: dir.to_path_buf(),
        ..BrokerConfig::default()
    };
    Broker::open(config).unwrap().0
}

/// One record on topic `t`, from a fresh origin.
#[allow(dead_code)] // not every test binary uses it
pub fn batch(broker: &Broker, payload: &[u8]) -> Batch {
    Batch {
        topic: "t".into(),
        records: RecordBlock::single(0, b"", payload).unwrap(),
        timestamp: 1,
        priority: false,
        origin: broker.next_origin(),
    }
}

/// Options of durable consumer `name`: resuming, acks within 30 s, 100 in flight.
#[allow(dead_code)] // not every test binary uses it
pub fn durable(name: &str) -> ConsumerOptions {
    ConsumerOptions {
        name: Some(name.into()),
        filter: None,
        start: Start::Resume,
        ack_timeout: Some(Duration::from_secs(30)),
        max_inflight: 100,
    }
}
