//! Helpers shared by the broker's integration tests.

use fogline_broker::{Batch, Broker, BrokerConfig, StorageMode};
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
