//! Where a Kafka-in bridge resumes: the newest record of each Kafka partition that a stream
//! already holds, found by its origin headers (`kafka-topic`, `kafka-partition`,
//! `kafka-offset`) and its fogline topic, read back from the stream's tail.
//!
//! The bridge stores each partition's records in Kafka order, one acknowledged batch after
//! another, so everything of a partition up to the newest record found is stored: resuming
//! after it stores nothing twice, even when the offsets committed in Kafka lag behind (they
//! are committed after the records are stored, every `commit_interval`).

use std::collections::HashMap;

use fogline_broker::Stream;
use fogline_log::Record;

use super::{KAFKA_OFFSET, KAFKA_PARTITION, KAFKA_TOPIC};

/// A Kafka topic and partition.
pub type Partition = (String, i32);

/// The first window read back, in stream records; it grows fourfold while some partition
/// is still not found.
const FIRST_WINDOW: u64 = 256;
const LARGEST_WINDOW: u64 = 1 << 20;
/// Bytes asked per read.
const READ_BYTES: usize = 8 << 20;

/// The Kafka topic, partition and offset a record came from, if its headers name them.
pub fn origin_of(r: &Record) -> Option<(&str, i32, i64)> {
    let (mut topic, mut partition, mut offset) = (None, None, None);
    for (k, v) in fogline_wire::header_entries(&r.headers).ok()? {
        let v = || std::str::from_utf8(v).ok();
        match k {
            KAFKA_TOPIC if topic.is_none() => topic = v(),
            KAFKA_PARTITION if partition.is_none() => partition = v()?.parse().ok(),
            KAFKA_OFFSET if offset.is_none() => offset = v()?.parse().ok(),
            _ => {}
        }
    }
    Some((topic?, partition?, offset?))
}

/// The newest Kafka offset `stream` holds of each of `wanted`'s partitions, among records
/// whose fogline topic is `fogline_topic(kafka topic)`. Reads back from the tail until every
/// partition is found or the stream's oldest record is reached.
///
/// # Errors
/// The stream cannot be read.
pub fn newest_stored(
    stream: &Stream,
    wanted: &[Partition],
    fogline_topic: impl Fn(&str) -> String,
) -> Result<HashMap<Partition, i64>, String> {
    let topics: HashMap<&str, String> = wanted
        .iter()
        .map(|(t, _)| (t.as_str(), fogline_topic(t)))
        .collect();
    let mut found: HashMap<Partition, i64> = HashMap::new();
    let (first, next) = stream.bounds();
    let mut end = next;
    let mut window = FIRST_WINDOW;
    while end > first && found.len() < wanted.len() {
        let start = end.saturating_sub(window).max(first);
        // Within a window, later records are newer: the last match of a partition wins.
        let mut in_window: HashMap<Partition, i64> = HashMap::new();
        let mut at = start;
        while at < end {
            let records = stream
                .read(at, (end - at) as usize, READ_BYTES)
                .map_err(|e| format!("reading back stream {:?}: {e}", stream.name()))?;
            let Some(last) = records.last() else { break };
            at = last.offset + 1;
            for r in records.iter().filter(|r| r.offset < end) {
                let Some((t, p, o)) = origin_of(r) else {
                    continue;
                };
                let key = (t.to_string(), p);
                if found.contains_key(&key) || !wanted.contains(&key) {
                    continue;
                }
                if topics
                    .get(t)
                    .is_some_and(|ft| ft.as_bytes() == &r.topic[..])
                {
                    in_window.insert(key, o);
                }
            }
        }
        found.extend(in_window);
        end = start;
        window = (window * 4).min(LARGEST_WINDOW);
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use fogline_broker::link::PublishOptions;
    use fogline_broker::{Broker, BrokerConfig, StorageMode};

    use super::*;

    async fn publish(
        link: &fogline_broker::link::Link,
        topic: &str,
        origin: Option<(&str, &str, i64)>,
    ) {
        let mut h: Vec<(&str, Vec<u8>)> = Vec::new();
        if let Some((t, p, o)) = origin {
            h.push((KAFKA_TOPIC, t.into()));
            h.push((KAFKA_PARTITION, p.into()));
            h.push((KAFKA_OFFSET, o.to_string().into()));
        }
        let h: Vec<(&str, &[u8])> = h.iter().map(|(k, v)| (*k, &v[..])).collect();
        let opts = PublishOptions {
            acked: true,
            priority: false,
        };
        link.publish_with(topic, &h, "x", opts).await.unwrap();
    }

    #[tokio::test]
    async fn the_newest_record_of_each_partition_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = BrokerConfig {
            storage: StorageMode::Memory,
            data_dir: dir.path().to_path_buf(),
            ..BrokerConfig::default()
        };
        let broker = Broker::open(cfg).unwrap().0;
        let link = broker.link("test");
        for o in 0..10 {
            publish(&link, "a/b", Some(("a.b", "0", o))).await;
        }
        publish(&link, "a/b", Some(("a.b", "1", 3))).await;
        // Thousands of other records after them: the window must grow to find them.
        for i in 0..3000 {
            publish(&link, "other", None).await;
            if i == 1000 {
                // Same origin, another fogline topic (another bridge's): not ours.
                publish(&link, "elsewhere", Some(("a.b", "0", 99))).await;
            }
        }
        publish(&link, "a/b", Some(("a.b", "1", 4))).await;
        let stream = broker.stream("default").unwrap();
        let wanted: Vec<Partition> = vec![("a.b".into(), 0), ("a.b".into(), 1), ("a.b".into(), 2)];
        let found = newest_stored(&stream, &wanted, |t| t.replace('.', "/")).unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[&("a.b".to_string(), 0)], 9);
        assert_eq!(found[&("a.b".to_string(), 1)], 4);
    }
}
