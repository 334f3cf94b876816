//! Helpers shared by the broker's integration tests.

use fogline_broker::{Batch, Broker};
use fogline_wire::RecordBlock;

/// One record on topic `t`, from a fresh origin.
pub fn batch(broker: &Broker, payload: &[u8]) -> Batch {
    Batch {
        topic: "t".into(),
        records: RecordBlock::single(0, b"", payload).unwrap(),
        timestamp: 1,
        priority: false,
        origin: broker.next_origin(),
    }
}
