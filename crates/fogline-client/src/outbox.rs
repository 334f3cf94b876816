//! The outgoing buffers: encoded frames waiting for the writer task.
//!
//! Publishers encode records straight into a lane buffer (no per-record
//! allocation, no channel send): a record for the same topic, flags and ack
//! mode as the frame at the end of its lane joins that frame (the
//! `RecordBlockWriter` keeps it valid after every record), otherwise a new
//! Publish frame starts. The writer task swaps every buffer out whenever it
//! is free, so batches grow only while the socket is busy: at low rates each
//! record leaves at once, at high rates frames fill up to the batch cap.
//!
//! Order of writing: `control` (every non-publish frame), then the `urgent`
//! lane (high-priority records overtake bulk ones), then the `bulk` lane.
//! `control` is cleared when a connection is lost (its frames name the old
//! connection's ids); both lanes survive a reconnect.
//!
//! Byte counters (`appended`, `done`) let `flush` wait for exactly what was
//! queued before it.

use bytes::BytesMut;
use fogline_wire::{encode_publish_header, validate_topic, RecordBlockWriter, FLAG_HIGH_PRIORITY};

use crate::error::ClientError;

/// Publish frame header bytes besides the topic (len, kind, request_id,
/// flags, topic length, count).
pub(crate) const PUBLISH_OVERHEAD: usize = 4 + 1 + 8 + 1 + 2 + 4;
/// Encoded record bytes besides headers and payload.
pub(crate) const RECORD_OVERHEAD: usize = 8 + 4 + 4;

/// The frame at the end of a lane that may still take records.
struct OpenBatch {
    topic: String,
    flags: u8,
    request_id: u64,
    writer: RecordBlockWriter,
}

/// Publish frames of one priority.
#[derive(Default)]
struct Lane {
    buf: BytesMut,
    open: Option<OpenBatch>,
}

/// Where a pushed record went.
pub(crate) struct Pushed {
    /// The request id of its frame (0: no ack).
    pub request_id: u64,
    /// It started a new frame (an acked one needs its own ack slot).
    pub new_frame: bool,
    /// The buffers were empty before, so the writer may be asleep.
    pub was_empty: bool,
    /// `appended` after the record: the frame is written once `done` passes it.
    pub end: u64,
}

/// One record to append.
pub(crate) struct RecordIn<'a> {
    pub topic: &'a str,
    pub flags: u8,
    pub timestamp: u64,
    pub headers: &'a [u8],
    pub payload: &'a [u8],
}

/// What the writer takes: control frames, urgent and bulk publishes.
pub(crate) type Taken = [BytesMut; 3];

#[derive(Default)]
pub(crate) struct Outbox {
    control: BytesMut,
    urgent: Lane,
    bulk: Lane,
    /// Bytes ever appended to any buffer.
    pub appended: u64,
    /// Bytes written (or dropped with a lost connection).
    pub done: u64,
    /// Bytes the writer took and is writing now.
    pub writing: u64,
}

impl Outbox {
    pub(crate) fn is_empty(&self) -> bool {
        self.control.is_empty() && self.urgent.buf.is_empty() && self.bulk.buf.is_empty()
    }

    /// Publish bytes queued (what the buffer bound applies to).
    pub(crate) fn publish_bytes(&self) -> usize {
        self.urgent.buf.len() + self.bulk.buf.len()
    }

    /// Whether a record would join the open frame of its lane.
    pub(crate) fn would_join(&self, rec: &RecordIn<'_>, acked: bool, batch_cap: usize) -> bool {
        let lane = self.lane(rec.flags);
        let record_len = RECORD_OVERHEAD + rec.headers.len() + rec.payload.len();
        match &lane.open {
            Some(open) => {
                open.topic == rec.topic
                    && open.flags == rec.flags
                    && (open.request_id != 0) == acked
                    && open.writer.frame_len(&lane.buf) + record_len <= batch_cap
            }
            None => false,
        }
    }

    fn lane(&self, flags: u8) -> &Lane {
        if flags & FLAG_HIGH_PRIORITY != 0 {
            &self.urgent
        } else {
            &self.bulk
        }
    }

    /// Appends a record. An acked record that needs a new frame gets the
    /// request id `new_id` returns; a fire-and-forget one uses id 0.
    pub(crate) fn push(
        &mut self,
        rec: &RecordIn<'_>,
        acked: bool,
        new_id: impl FnOnce() -> u64,
        batch_cap: usize,
    ) -> Result<Pushed, ClientError> {
        let was_empty = self.is_empty();
        let joins = self.would_join(rec, acked, batch_cap);
        let lane = if rec.flags & FLAG_HIGH_PRIORITY != 0 {
            &mut self.urgent
        } else {
            &mut self.bulk
        };
        let before = lane.buf.len();
        if !joins {
            validate_topic(rec.topic).map_err(ClientError::InvalidTopic)?;
            let request_id = if acked { new_id() } else { 0 };
            let writer = encode_publish_header(&mut lane.buf, request_id, rec.flags, rec.topic)?;
            lane.open = Some(OpenBatch {
                topic: rec.topic.to_string(),
                flags: rec.flags,
                request_id,
                writer,
            });
        }
        let Some(open) = lane.open.as_mut() else {
            return Err(ClientError::Usage("no open batch"));
        };
        if let Err(e) = open
            .writer
            .push(&mut lane.buf, rec.timestamp, rec.headers, rec.payload)
        {
            if !joins {
                lane.buf.truncate(before);
                lane.open = None;
            }
            return Err(e.into());
        }
        let request_id = open.request_id;
        self.appended += (lane.buf.len() - before) as u64;
        Ok(Pushed {
            request_id,
            new_frame: !joins,
            was_empty,
            end: self.appended,
        })
    }

    /// Appends an encoded control frame; returns whether the buffers were empty.
    pub(crate) fn push_control(&mut self, frame: &[u8]) -> bool {
        let was_empty = self.is_empty();
        self.control.extend_from_slice(frame);
        self.appended += frame.len() as u64;
        was_empty
    }

    /// Takes everything queued for the writer, in writing order.
    pub(crate) fn take(&mut self) -> Option<Taken> {
        if self.is_empty() {
            return None;
        }
        self.urgent.open = None;
        self.bulk.open = None;
        let taken = [
            self.control.split(),
            self.urgent.buf.split(),
            self.bulk.buf.split(),
        ];
        self.writing = taken.iter().map(|b| b.len() as u64).sum();
        Some(taken)
    }

    /// The writer finished (or lost) what it took.
    pub(crate) fn finish_write(&mut self) {
        self.done += self.writing;
        self.writing = 0;
    }

    /// Drops queued control frames (they belong to a lost connection).
    pub(crate) fn drop_control(&mut self) {
        self.done += self.control.len() as u64;
        self.control.clear();
    }

    /// Everything still buffered counts as done (the client is gone).
    pub(crate) fn drop_all(&mut self) {
        self.finish_write();
        self.drop_control();
        for lane in [&mut self.urgent, &mut self.bulk] {
            self.done += lane.buf.len() as u64;
            lane.buf.clear();
            lane.open = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;
    use fogline_wire::{decode, Frame};

    fn rec<'a>(topic: &'a str, payload: &'a [u8]) -> RecordIn<'a> {
        RecordIn {
            topic,
            flags: 0,
            timestamp: 0,
            headers: b"",
            payload,
        }
    }

    fn frames(mut buf: BytesMut) -> Vec<Frame> {
        let mut out = Vec::new();
        while let Some(f) = decode(&mut buf, u32::MAX).unwrap() {
            out.push(f);
        }
        out
    }

    #[test]
    fn same_topic_batches_until_taken_or_full() {
        let mut ob = Outbox::default();
        let first = ob.push(&rec("a", b"1"), false, || 0, 1 << 16).unwrap();
        assert!(first.new_frame && first.was_empty);
        let second = ob.push(&rec("a", b"2"), false, || 0, 1 << 16).unwrap();
        assert!(!second.new_frame && !second.was_empty);
        ob.push(&rec("b", b"3"), false, || 0, 1 << 16).unwrap();
        ob.push(&rec("a", b"4"), false, || 0, 1 << 16).unwrap();
        let [control, _, data] = ob.take().unwrap();
        assert!(control.is_empty());
        let counts: Vec<u32> = frames(data)
            .iter()
            .map(|f| match f {
                Frame::Publish { records, .. } => records.count(),
                _ => 0,
            })
            .collect();
        assert_eq!(counts, [2, 1, 1]);
        // After a take, the next record starts a new frame.
        assert!(
            ob.push(&rec("a", b"5"), false, || 0, 1 << 16)
                .unwrap()
                .new_frame
        );
    }

    #[test]
    fn batch_cap_and_ack_mode_split_frames() {
        let mut ob = Outbox::default();
        let cap = PUBLISH_OVERHEAD + 1 + 2 * (RECORD_OVERHEAD + 10);
        for _ in 0..5 {
            ob.push(&rec("t", &[0; 10]), false, || 0, cap).unwrap();
        }
        let acked = ob.push(&rec("t", b"x"), true, || 1 << 32, cap).unwrap();
        assert!(acked.new_frame);
        assert_eq!(acked.request_id, 1 << 32);
        let joined = ob
            .push(&rec("t", b"y"), true, || (1 << 32) + 1, cap)
            .unwrap();
        assert_eq!(joined.request_id, 1 << 32);
        assert!(!joined.new_frame);
        let [_, _, data] = ob.take().unwrap();
        let got: Vec<(u64, u32)> = frames(data)
            .iter()
            .map(|f| match f {
                Frame::Publish {
                    request_id,
                    records,
                    ..
                } => (*request_id, records.count()),
                _ => (u64::MAX, 0),
            })
            .collect();
        assert_eq!(got, [(0, 2), (0, 2), (0, 1), (1 << 32, 2)]);
    }

    #[test]
    fn invalid_topic_leaves_buffer_untouched() {
        let mut ob = Outbox::default();
        assert!(matches!(
            ob.push(&rec("a/+", b"1"), false, || 0, 1 << 16),
            Err(ClientError::InvalidTopic(_))
        ));
        assert!(ob.is_empty());
        assert_eq!(ob.appended, 0);
    }

    #[test]
    fn urgent_records_are_taken_before_bulk_ones() {
        let mut ob = Outbox::default();
        ob.push(&rec("bulk", b"1"), false, || 0, 1 << 16).unwrap();
        let urgent = RecordIn {
            flags: FLAG_HIGH_PRIORITY,
            ..rec("alarm", b"!")
        };
        ob.push(&urgent, false, || 0, 1 << 16).unwrap();
        ob.push_control(&[1, 0, 0, 0, 0x03]);
        let [control, first, second] = ob.take().unwrap();
        assert_eq!(&control[..], &[1, 0, 0, 0, 0x03]);
        let topic = |buf: BytesMut| match frames(buf).pop() {
            Some(Frame::Publish { topic, .. }) => topic.to_string(),
            _ => String::new(),
        };
        assert_eq!(topic(first), "alarm");
        assert_eq!(topic(second), "bulk");
    }

    #[test]
    fn counters_track_writes_and_drops() {
        let mut ob = Outbox::default();
        ob.push(&rec("a", b"1"), false, || 0, 1 << 16).unwrap();
        assert!(!ob.push_control(&[1, 2, 3]));
        let total = ob.appended;
        let taken = ob.take().unwrap();
        assert_eq!(taken.iter().map(|b| b.len() as u64).sum::<u64>(), total);
        assert_eq!(ob.done, 0);
        ob.finish_write();
        assert_eq!(ob.done, total);
        ob.push_control(&[9]);
        ob.drop_control();
        assert_eq!(ob.done, ob.appended);
    }
}
