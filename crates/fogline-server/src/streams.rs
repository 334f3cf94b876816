//! Stream descriptions for `StreamList` (`fogline stream ls|info`).

use fogline_broker::{Broker, StorageMode};
use fogline_wire::{Storage, StreamInfo};

/// One [`StreamInfo`] per stream of the broker.
pub fn infos(broker: &Broker) -> Vec<StreamInfo> {
    broker
        .streams()
        .iter()
        .map(|s| {
            let st = s.stats();
            StreamInfo {
                name: s.name().into(),
                storage: match s.storage() {
                    StorageMode::Memory => Storage::Memory,
                    StorageMode::Mmap => Storage::Mmap,
                    StorageMode::Fsync => Storage::Fsync,
                },
                subjects: s.subjects().iter().map(|f| f.as_str().into()).collect(),
                first_offset: st.first_offset,
                next_offset: st.next_offset,
                records: st.records,
                bytes: st.bytes,
                segments: st.segments as u32,
                consumers: s.open_consumers() as u32,
            }
        })
        .collect()
}
