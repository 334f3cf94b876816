//! What the bridges that carry a stream out (Kafka, MQTT) read from it besides records:
//! their lag, and the records retention dropped before they were carried.

use std::sync::atomic::Ordering::Relaxed;

use fogline_broker::Stream;

use crate::status::BridgeStatus;

/// Sets `status`'s lag from `stream`: the records from `cursor` (the bridge's position) on,
/// and the timestamp of the oldest of them. Read from the stream because while the other
/// side is down nothing else measures it.
pub(crate) fn refresh_lag(stream: &Stream, cursor: u64, status: &BridgeStatus) {
    let (first, next) = stream.bounds();
    let from = cursor.max(first);
    if from >= next {
        status.set_lag(0, 0);
        return;
    }
    let oldest = stream
        .read(from, 1, usize::MAX)
        .ok()
        .and_then(|r| r.first().map(|r| r.timestamp))
        .unwrap_or(0);
    status.set_lag(next - from, oldest);
}

/// When retention dropped records from `cursor` on before the bridge carried them: counts
/// them in `status.dropped`, logs the gap and returns the oldest offset kept, where the
/// bridge goes on.
pub(crate) fn lost_to_retention(
    stream: &Stream,
    cursor: u64,
    status: &BridgeStatus,
) -> Option<u64> {
    let (first, _) = stream.bounds();
    if cursor >= first {
        return None;
    }
    let lost = first - cursor;
    status.dropped.fetch_add(lost, Relaxed);
    tracing::error!(bridge = %status.name, kind = status.kind.as_str(), stream = %stream.name(), from = cursor, to = first, lost, "retention dropped records the bridge had not forwarded");
    Some(first)
}
