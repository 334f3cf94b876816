//! What a partition already holds from this bridge: the stream offset of the newest record
//! whose origin headers name this node and stream, read back from the partition's tail.
//!
//! The bridge writes to each partition in stream order, one request at a time, so everything
//! of ours in a partition up to that offset is there and nothing after it is: resuming
//! after it sends each record once, whatever happened to the bridge's own saved position (a
//! kill -9 loses up to a second of it) or to a request whose answer was lost.

use std::time::Duration;

use rskafka::client::partition::{OffsetAt, PartitionClient};
use rskafka::record::RecordAndOffset;

use super::{ORIGIN_NODE, ORIGIN_OFFSET, ORIGIN_STREAM};

/// The first window read back from the tail, in Kafka offsets; it grows fourfold while it
/// holds nothing of ours (other producers may share the topic).
const FIRST_WINDOW: i64 = 64;
const LARGEST_WINDOW: i64 = 1 << 20;

/// Bytes asked per fetch.
const FETCH_BYTES: i32 = 4 << 20;

/// The stream offset of a record, if it came from `node`'s `stream`.
pub fn origin_of(r: &RecordAndOffset, node: &str, stream: &str) -> Option<u64> {
    let h = &r.record.headers;
    if h.get(ORIGIN_NODE).map(Vec::as_slice) != Some(node.as_bytes())
        || h.get(ORIGIN_STREAM).map(Vec::as_slice) != Some(stream.as_bytes())
    {
        return None;
    }
    std::str::from_utf8(h.get(ORIGIN_OFFSET)?)
        .ok()?
        .parse()
        .ok()
}

/// The stream offset of the newest record from `node`'s `stream` in the partition, if any.
///
/// # Errors
/// Kafka's, or a timeout: nothing is written by this, so the caller may simply try again.
pub async fn last_origin(
    pc: &PartitionClient,
    node: &str,
    stream: &str,
    timeout: Duration,
) -> Result<Option<u64>, String> {
    let ask = |at: OffsetAt| async move {
        tokio::time::timeout(timeout, pc.get_offset(at))
            .await
            .map_err(|_| "no answer to a list-offsets request".to_string())?
            .map_err(|e| e.to_string())
    };
    let high = ask(OffsetAt::Latest).await?;
    let low = ask(OffsetAt::Earliest).await?;
    let mut end = high;
    let mut window = FIRST_WINDOW;
    while end > low {
        let start = (end - window).max(low);
        let mut found = None;
        let mut at = start;
        while at < end {
            let fetch = pc.fetch_records(at, 1..FETCH_BYTES, 100);
            let (records, _) = tokio::time::timeout(timeout, fetch)
                .await
                .map_err(|_| "no answer to a fetch request".to_string())?
                .map_err(|e| e.to_string())?;
            let Some(last) = records.last() else { break };
            let next = last.offset + 1;
            for r in records.iter().filter(|r| r.offset < end) {
                if let Some(o) = origin_of(r, node, stream) {
                    found = Some(o);
                }
            }
            at = next;
        }
        if found.is_some() {
            return Ok(found);
        }
        end = start;
        window = (window * 4).min(LARGEST_WINDOW);
    }
    Ok(None)
}
