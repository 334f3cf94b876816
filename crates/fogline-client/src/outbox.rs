//! The outgoing buffers: encoded frames waiting for the writer task.
//!
//! Publishers encode records straight into open Publish frames (no
//! per-record allocation, no channel send). Each priority lane keeps up to
//! `MAX_OPEN` frames open, at most one per topic: a record joins the open
//! frame of its topic if flags and ack mode match (the `RecordBlockWriter`
//! keeps it valid after every record) until the frame reaches the batch cap
//! and is sealed; otherwise the topic's open frame is sealed first, so a
//! topic's records keep their order. The
//! writer task takes everything whenever it is free, so batches grow only
//! while the socket is busy: at low rates each record leaves at once, at
//! high rates frames fill up to the cap, also when topics interleave.
//!
//! Order of writing: `control` (every non-publish frame), then the urgent
//! lane (high-priority records overtake bulk ones), then the bulk lane;
//! within a lane, sealed frames in sealing order, then open ones. Records of
//! one topic and priority thus keep their order. `control` is cleared when
//! a connection is lost (its frames name the old connection's ids); both
//! lanes survive a reconnect.
//!
//! Byte positions (`appended`, `done`) let `flush` wait for exactly what was
//! queued before it; a take always takes everything appended so far, so
//! `done` is where the last finished take ended: every byte before it was
//! written or dropped, every byte after it is still buffered. (Control
//! frames dropped with a connection do not move it while publish frames
//! appended before them are still buffered.)
//!
//! Direct writes: a writer task with nothing to write lends the outbox its
//! socket before it waits. A record appended to empty buffers is then
//! written at once by its publisher ([`Outbox::write_now`]), without the
//! task switch to the writer, which at low rates is most of the client's
//! latency (and, on a one-thread runtime, lets a caller's timer re-arm
//! before the writer runs). The publisher keeps the socket's turn, so the
//! records after it queue and the woken writer sends them together: a burst
//! costs one direct write and then batches as before. What a direct write
//! could not send waits in `carry`, ahead of everything else.

use std::io::IoSlice;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use fogline_wire::{encode_publish_header, validate_topic, RecordBlockWriter, FLAG_HIGH_PRIORITY};

use crate::error::ClientError;
use crate::transport::WriteHalf;

/// Publish frame header bytes besides the topic (len, kind, request_id,
/// flags, topic length, count).
pub(crate) const PUBLISH_OVERHEAD: usize = 4 + 1 + 8 + 1 + 2 + 4;
/// Encoded record bytes besides headers and payload.
pub(crate) const RECORD_OVERHEAD: usize = 8 + 4 + 4;
/// Open frames per lane; opening one more seals the oldest.
const MAX_OPEN: usize = 8;
/// Smallest buffer a new frame starts with.
const MIN_FRAME_BUF: usize = 512;
/// Written frame buffers kept for new frames: large buffers come from `mmap` and would
/// otherwise be unmapped after each write and page-faulted in again for the next frame.
const SPARE_BUFS: usize = 8;
/// Larger buffers are given back to the allocator.
const SPARE_MAX: usize = 4 << 20;

/// An open Publish frame that may still take records.
struct Batch {
    topic: String,
    flags: u8,
    request_id: u64,
    buf: BytesMut,
    writer: RecordBlockWriter,
}

impl Batch {
    fn is_for(&self, rec: &RecordIn<'_>, acked: bool) -> bool {
        self.topic == rec.topic && self.flags == rec.flags && (self.request_id != 0) == acked
    }

    fn fits(&self, record_len: usize, batch_cap: usize) -> bool {
        self.writer.frame_len(&self.buf) + record_len <= batch_cap
    }
}

/// Publish frames of one priority.
#[derive(Default)]
struct Lane {
    /// Frames that take no more records, with their request ids (0: no ack).
    sealed: Vec<(BytesMut, u64)>,
    open: Vec<Batch>,
    /// Index of the batch the last record went to (checked first).
    last: usize,
}

impl Lane {
    fn find(&self, rec: &RecordIn<'_>, acked: bool) -> Option<usize> {
        match self.open.get(self.last) {
            Some(b) if b.is_for(rec, acked) => Some(self.last),
            _ => self.open.iter().position(|b| b.is_for(rec, acked)),
        }
    }

    fn is_empty(&self) -> bool {
        self.sealed.is_empty() && self.open.is_empty()
    }

    fn seal(&mut self, index: usize) {
        let batch = self.open.remove(index);
        self.sealed.push((batch.buf, batch.request_id));
    }

    /// Seals every open frame of `topic`, oldest first.
    fn seal_topic(&mut self, topic: &str) {
        while let Some(i) = self.open.iter().position(|b| b.topic == topic) {
            self.seal(i);
        }
        self.last = 0;
    }

    /// Drops its acked frames: their request ids, and their bytes.
    fn drop_acked(&mut self, ids: &mut Vec<u64>) -> usize {
        let mut bytes = 0;
        self.sealed.retain(|(buf, id)| {
            let keep = *id == 0;
            if !keep {
                ids.push(*id);
                bytes += buf.len();
            }
            keep
        });
        self.open.retain(|b| {
            let keep = b.request_id == 0;
            if !keep {
                ids.push(b.request_id);
                bytes += b.buf.len();
            }
            keep
        });
        self.last = 0;
        bytes
    }

    fn drain_into(&mut self, out: &mut Vec<BytesMut>) {
        out.extend(self.sealed.drain(..).map(|(buf, _)| buf));
        out.extend(self.open.drain(..).map(|b| b.buf));
        self.last = 0;
    }
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

#[derive(Default)]
pub(crate) struct Outbox {
    control: BytesMut,
    urgent: Lane,
    bulk: Lane,
    /// Publish bytes queued (what the buffer bound applies to).
    queued: usize,
    /// Bytes ever appended to any buffer.
    pub appended: u64,
    /// Every byte appended before this position was written (or dropped with
    /// a lost connection); those after it are still buffered.
    pub done: u64,
    /// `appended` at the last take: `done` once that take is written.
    taken: u64,
    /// Bytes taken for writing and not yet written: by the writer, or by a
    /// direct write (its sent part and its `carry`).
    pub writing: u64,
    /// Emptied frame buffers for new frames.
    spare: Vec<BytesMut>,
    /// The idle writer's socket, lent for one direct write.
    lent: Option<Arc<WriteHalf>>,
    /// The unwritten rest of a direct write (counted in `writing`): the
    /// writer sends it before anything else.
    carry: Vec<BytesMut>,
}

impl Outbox {
    /// Nothing for the writer.
    pub(crate) fn is_empty(&self) -> bool {
        self.control.is_empty()
            && self.urgent.is_empty()
            && self.bulk.is_empty()
            && self.carry.is_empty()
    }

    /// Publish bytes queued (what the buffer bound applies to).
    pub(crate) fn publish_bytes(&self) -> usize {
        self.queued
    }

    fn lane(&self, flags: u8) -> &Lane {
        if flags & FLAG_HIGH_PRIORITY != 0 {
            &self.urgent
        } else {
            &self.bulk
        }
    }

    /// Whether a record would join an open frame.
    pub(crate) fn would_join(&self, rec: &RecordIn<'_>, acked: bool, batch_cap: usize) -> bool {
        let lane = self.lane(rec.flags);
        let record_len = RECORD_OVERHEAD + rec.headers.len() + rec.payload.len();
        lane.find(rec, acked)
            .is_some_and(|i| lane.open[i].fits(record_len, batch_cap))
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
        let lane = if rec.flags & FLAG_HIGH_PRIORITY != 0 {
            &mut self.urgent
        } else {
            &mut self.bulk
        };
        let record_len = RECORD_OVERHEAD + rec.headers.len() + rec.payload.len();
        let found = lane.find(rec, acked);
        let (index, joins) = match found {
            Some(i) if lane.open[i].fits(record_len, batch_cap) => (i, true),
            _ => {
                validate_topic(rec.topic).map_err(ClientError::InvalidTopic)?;
                let request_id = if acked { new_id() } else { 0 };
                let need = (PUBLISH_OVERHEAD + rec.topic.len() + record_len).max(MIN_FRAME_BUF);
                let mut buf = self.spare.pop().unwrap_or_default();
                buf.reserve(need);
                let writer = encode_publish_header(&mut buf, request_id, rec.flags, rec.topic)?;
                // Earlier frames of this topic (a full one, or one of the other ack mode) are
                // sealed, so they are written before this one: records of a topic go out in
                // the order they were published. Failing that, the oldest frame is sealed.
                let before = lane.open.len();
                lane.seal_topic(rec.topic);
                if lane.open.len() == before && before >= MAX_OPEN {
                    lane.seal(0);
                }
                lane.open.push(Batch {
                    topic: rec.topic.to_string(),
                    flags: rec.flags,
                    request_id,
                    buf,
                    writer,
                });
                (lane.open.len() - 1, false)
            }
        };
        let batch = &mut lane.open[index];
        let before = if joins { batch.buf.len() } else { 0 };
        if let Err(e) = batch
            .writer
            .push(&mut batch.buf, rec.timestamp, rec.headers, rec.payload)
        {
            if !joins {
                lane.open.pop();
            }
            return Err(e.into());
        }
        lane.last = index;
        let added = batch.buf.len() - before;
        let request_id = batch.request_id;
        self.queued += added;
        self.appended += added as u64;
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

    /// Takes everything queued for the writer, in writing order: a direct
    /// write's unwritten rest first.
    pub(crate) fn take(&mut self) -> Option<Vec<BytesMut>> {
        if self.is_empty() {
            return None;
        }
        // The carry is already counted in `writing`.
        let mut out = std::mem::take(&mut self.carry);
        let carried = out.len();
        if !self.control.is_empty() {
            out.push(self.control.split());
        }
        self.urgent.drain_into(&mut out);
        self.bulk.drain_into(&mut out);
        self.queued = 0;
        self.writing += out[carried..].iter().map(|b| b.len() as u64).sum::<u64>();
        self.taken = self.appended;
        Some(out)
    }

    /// The writer, about to wait with nothing in hand, lends its socket.
    pub(crate) fn lend(&mut self, socket: Arc<WriteHalf>) {
        debug_assert!(self.is_empty() && self.writing == 0);
        self.lent = Some(socket);
    }

    /// The writer, awake, takes its socket back (if no publisher has it).
    pub(crate) fn take_back(&mut self) {
        self.lent = None;
    }

    /// As [`Outbox::take_back`], unless the lent socket is another (a newer
    /// connection's).
    pub(crate) fn take_back_if(&mut self, socket: &Arc<WriteHalf>) {
        if self.lent.as_ref().is_some_and(|s| Arc::ptr_eq(s, socket)) {
            self.lent = None;
        }
    }

    /// While the writer's socket is lent: writes everything queued now,
    /// without waiting, and keeps the socket's turn (the writer, which the
    /// caller must wake, gets it back). `None`: not lent; `Some(true)`: all
    /// written; `Some(false)`: the rest is in `carry` for the writer (also
    /// when the socket is full or failed: the writer waits or meets the
    /// error).
    pub(crate) fn write_now(&mut self) -> Option<bool> {
        let socket = self.lent.take()?;
        let mut chunks = self.take()?;
        let total: usize = chunks.iter().map(BytesMut::len).sum();
        let written = match chunks.as_slice() {
            [only] => socket.try_write(only),
            many => {
                let io: Vec<IoSlice<'_>> = many.iter().map(|c| IoSlice::new(c)).collect();
                socket.try_write_vectored(&io)
            }
        };
        match written {
            Ok(n) if n == total => {
                self.finish_write();
                self.recycle(chunks);
                Some(true)
            }
            Ok(mut n) => {
                chunks.retain_mut(|c| {
                    let skip = n.min(c.len());
                    c.advance(skip);
                    n -= skip;
                    !c.is_empty()
                });
                self.carry = chunks;
                Some(false)
            }
            Err(_) => {
                self.carry = chunks;
                Some(false)
            }
        }
    }

    /// Keeps written buffers (emptied) for new frames, up to a few.
    pub(crate) fn recycle(&mut self, chunks: Vec<BytesMut>) {
        for mut c in chunks {
            if self.spare.len() >= SPARE_BUFS {
                break;
            }
            if (MIN_FRAME_BUF..=SPARE_MAX).contains(&c.capacity()) {
                c.clear();
                self.spare.push(c);
            }
        }
    }

    /// The writer finished (or lost) what it took.
    pub(crate) fn finish_write(&mut self) {
        // A drop since the take may have moved `done` past it already.
        self.done = self.done.max(self.taken);
        self.writing = 0;
    }

    /// Drops queued control frames (they belong to a lost connection). They
    /// count as done only with nothing else buffered: publish frames appended
    /// before them are still to be written.
    pub(crate) fn drop_control(&mut self) {
        self.control.clear();
        if self.is_empty() {
            self.done = self.appended;
        }
    }

    /// The connection is gone: what was being written (and any carry)
    /// counts as done, control frames are dropped, and nobody may write to
    /// the old socket.
    pub(crate) fn lose_connection(&mut self) {
        self.lent = None;
        self.carry.clear();
        self.finish_write();
        self.drop_control();
    }

    /// Drops every buffered acked frame (after a lost connection cut one that
    /// was sent: see `conn::lost`); returns their request ids.
    pub(crate) fn drop_acked(&mut self) -> Vec<u64> {
        let mut ids = Vec::new();
        let bytes = self.urgent.drop_acked(&mut ids) + self.bulk.drop_acked(&mut ids);
        self.queued -= bytes;
        if self.is_empty() {
            self.done = self.appended;
        }
        ids
    }

    /// Everything still buffered counts as done (the client is gone).
    pub(crate) fn drop_all(&mut self) {
        self.lose_connection();
        self.queued = 0;
        self.urgent = Lane::default();
        self.bulk = Lane::default();
        self.done = self.appended;
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

    /// Every frame of the taken chunks, in writing order.
    fn frames(chunks: Vec<BytesMut>) -> Vec<Frame> {
        let mut out = Vec::new();
        for mut buf in chunks {
            while let Some(f) = decode(&mut buf, u32::MAX).unwrap() {
                out.push(f);
            }
            assert!(buf.is_empty());
        }
        out
    }

    fn publishes(chunks: Vec<BytesMut>) -> Vec<(String, u64, u32)> {
        frames(chunks)
            .into_iter()
            .filter_map(|f| match f {
                Frame::Publish {
                    topic,
                    request_id,
                    records,
                    ..
                } => Some((topic.to_string(), request_id, records.count())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn interleaved_topics_batch_per_topic_until_taken() {
        let mut ob = Outbox::default();
        let first = ob.push(&rec("a", b"1"), false, || 0, 1 << 16).unwrap();
        assert!(first.new_frame && first.was_empty);
        let second = ob.push(&rec("a", b"2"), false, || 0, 1 << 16).unwrap();
        assert!(!second.new_frame && !second.was_empty);
        for p in [b"3", b"4", b"5"] {
            ob.push(&rec("b", p), false, || 0, 1 << 16).unwrap();
            ob.push(&rec("a", p), false, || 0, 1 << 16).unwrap();
        }
        let got = publishes(ob.take().unwrap());
        assert_eq!(got, [("a".into(), 0, 5), ("b".into(), 0, 3)]);
        // After a take, the next record starts a new frame.
        let next = ob.push(&rec("a", b"6"), false, || 0, 1 << 16).unwrap();
        assert!(next.new_frame);
    }

    #[test]
    fn written_buffers_are_reused_for_new_frames_and_encode_cleanly() {
        let mut ob = Outbox::default();
        let big = vec![7u8; 100_000];
        ob.push(&rec("a", &big), false, || 0, 1 << 20).unwrap();
        let chunks = ob.take().unwrap();
        let ptr = chunks[0].as_ptr();
        ob.finish_write();
        ob.recycle(chunks);
        ob.push(&rec("b", b"small"), false, || 0, 1 << 20).unwrap();
        let again = ob.take().unwrap();
        assert_eq!(again[0].as_ptr(), ptr, "the written buffer was reused");
        assert_eq!(publishes(again), [("b".into(), 0, 1)]);
        // Oversized buffers go back to the allocator.
        ob.recycle(vec![BytesMut::with_capacity(SPARE_MAX + 1)]);
        assert!(ob.spare.is_empty());
    }

    #[test]
    fn per_topic_order_survives_sealing() {
        let mut ob = Outbox::default();
        let cap = PUBLISH_OVERHEAD + 2 + 2 * (RECORD_OVERHEAD + 1);
        // Ten topics round-robin: more than MAX_OPEN, and frames fill up.
        for i in 0..50u8 {
            let topic = format!("t{}", i % 10);
            ob.push(&rec(&topic, &[i]), false, || 0, cap).unwrap();
        }
        let mut seen: std::collections::HashMap<String, Vec<u8>> = Default::default();
        for f in frames(ob.take().unwrap()) {
            if let Frame::Publish { topic, records, .. } = f {
                let list = seen.entry(topic.to_string()).or_default();
                list.extend(records.iter().map(|r| r.payload[0]));
            }
        }
        assert_eq!(seen.len(), 10);
        for (topic, payloads) in seen {
            let k: u8 = topic[1..].parse().unwrap();
            let want: Vec<u8> = (0..5).map(|j| k + 10 * j).collect();
            assert_eq!(payloads, want, "{topic}");
        }
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
        assert!(ob.would_join(&rec("t", b"y"), true, cap));
        let joined = ob
            .push(&rec("t", b"y"), true, || (1 << 32) + 1, cap)
            .unwrap();
        assert_eq!(joined.request_id, 1 << 32);
        assert!(!joined.new_frame);
        let got = publishes(ob.take().unwrap());
        let t = || "t".to_string();
        assert_eq!(
            got,
            [(t(), 0, 2), (t(), 0, 2), (t(), 0, 1), (t(), 1 << 32, 2)]
        );
    }

    /// Fire-and-forget and acknowledged records of one topic batch in separate frames, yet
    /// go out in the order they were published.
    #[test]
    fn mixed_ack_modes_keep_a_topics_order() {
        let mut ob = Outbox::default();
        let mut id = 0;
        let mut next = || {
            id += 1;
            id
        };
        ob.push(&rec("t", b"1"), false, &mut next, 1 << 16).unwrap();
        ob.push(&rec("u", b"a"), true, &mut next, 1 << 16).unwrap();
        ob.push(&rec("t", b"2"), true, &mut next, 1 << 16).unwrap();
        ob.push(&rec("t", b"3"), false, &mut next, 1 << 16).unwrap();
        ob.push(&rec("u", b"b"), true, &mut next, 1 << 16).unwrap();
        ob.push(&rec("t", b"4"), false, &mut next, 1 << 16).unwrap();
        let mut order: std::collections::HashMap<String, Vec<(u64, Vec<u8>)>> = Default::default();
        for f in frames(ob.take().unwrap()) {
            if let Frame::Publish {
                topic,
                request_id,
                records,
                ..
            } = f
            {
                let list = order.entry(topic.to_string()).or_default();
                list.extend(records.iter().map(|r| (request_id, r.payload.to_vec())));
            }
        }
        let t: Vec<(u64, Vec<u8>)> = vec![
            (0, b"1".to_vec()),
            (2, b"2".to_vec()),
            (0, b"3".to_vec()),
            (0, b"4".to_vec()),
        ];
        assert_eq!(order["t"], t, "one topic, published order");
        assert_eq!(order["u"], [(1, b"a".to_vec()), (1, b"b".to_vec())]);
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
        ob.push_control(&[9, 0, 0, 0, 0x03, 0, 0, 0, 0, 0, 0, 0, 0]);
        let chunks = ob.take().unwrap();
        assert_eq!(chunks[0][4], 0x03, "control first");
        let got = publishes(chunks);
        assert_eq!(got, [("alarm".into(), 0, 1), ("bulk".into(), 0, 1)]);
    }

    /// A connection lost while a direct write's rest waits in the carry: the rest is
    /// dropped (it belongs to the old stream) and the next connection starts with whole
    /// frames.
    #[tokio::test]
    async fn a_lost_connection_drops_the_carry() {
        let (a, _peer) = tokio::net::UnixStream::pair().unwrap();
        let (_read, write) = a.into_split();
        let mut ob = Outbox::default();
        ob.lend(Arc::new(WriteHalf::from(write)));
        // Larger than the socket buffers, and the peer reads nothing: a partial write.
        let big = vec![7u8; 8 << 20];
        ob.push(&rec("big", &big), false, || 0, 16 << 20).unwrap();
        assert_eq!(ob.write_now(), Some(false));
        assert!(!ob.carry.is_empty(), "the rest waits in the carry");
        ob.lose_connection();
        assert!(ob.carry.is_empty());
        assert!(ob.lent.is_none(), "nobody writes to the old socket");
        assert_eq!(ob.done, ob.appended, "the lost bytes count as done");
        ob.push(&rec("next", b"x"), false, || 0, 16 << 20).unwrap();
        assert_eq!(publishes(ob.take().unwrap()), [("next".into(), 0, 1)]);
    }

    #[test]
    fn counters_track_writes_and_drops() {
        let mut ob = Outbox::default();
        ob.push(&rec("a", b"1"), false, || 0, 1 << 16).unwrap();
        ob.push(&rec("b", b"2"), false, || 0, 1 << 16).unwrap();
        assert!(!ob.push_control(&[1, 2, 3]));
        let total = ob.appended;
        assert_eq!(ob.publish_bytes() as u64 + 3, total);
        let taken = ob.take().unwrap();
        assert_eq!(taken.iter().map(|b| b.len() as u64).sum::<u64>(), total);
        assert_eq!(ob.publish_bytes(), 0);
        assert_eq!(ob.done, 0);
        ob.finish_write();
        assert_eq!(ob.done, total);
        ob.push_control(&[9]);
        ob.drop_control();
        assert_eq!(ob.done, ob.appended);
    }

    /// Control frames dropped with a connection do not count a publish frame
    /// buffered before them as done: `lost` would fail its ack although the
    /// frame goes out on the next connection.
    #[test]
    fn dropped_control_frames_do_not_pass_a_buffered_publish() {
        let mut ob = Outbox::default();
        let acked = ob.push(&rec("t", b"x"), true, || 7, 1 << 16).unwrap();
        ob.push_control(&[0; 64]);
        ob.lose_connection();
        assert!(ob.done < acked.end, "the acked frame is still buffered");
        let taken = ob.take().unwrap();
        assert_eq!(publishes(taken), [("t".into(), 7, 1)]);
        ob.finish_write();
        assert_eq!(ob.done, ob.appended);
        ob.push(&rec("t", b"y"), false, || 0, 1 << 16).unwrap();
        ob.drop_all();
        assert_eq!(ob.done, ob.appended, "a finished client counts everything");
    }

    #[test]
    fn dropping_acked_frames_keeps_the_others_in_order() {
        let mut ob = Outbox::default();
        let mut next = 10;
        let mut id = || {
            next += 1;
            next
        };
        let cap = 1 << 16;
        ob.push(&rec("a", b"1"), true, &mut id, cap).unwrap();
        ob.push(&rec("a", b"2"), false, &mut id, cap).unwrap(); // seals the acked frame
        ob.push(&rec("b", b"3"), true, &mut id, cap).unwrap();
        let mut urgent = rec("c", b"4");
        urgent.flags = FLAG_HIGH_PRIORITY;
        ob.push(&urgent, true, &mut id, cap).unwrap();
        ob.push(&rec("d", b"5"), false, &mut id, cap).unwrap();
        let mut dropped = ob.drop_acked();
        dropped.sort_unstable();
        assert_eq!(dropped, [11, 12, 13]);
        let left = ob.publish_bytes();
        let taken = ob.take().unwrap();
        assert_eq!(taken.iter().map(BytesMut::len).sum::<usize>(), left);
        assert_eq!(publishes(taken), [("a".into(), 0, 1), ("d".into(), 0, 1)]);
        ob.finish_write();
        assert_eq!(ob.done, ob.appended);

        ob.push(&rec("e", b"6"), true, &mut id, cap).unwrap();
        assert_eq!(ob.drop_acked(), [14]);
        assert!(ob.is_empty());
        assert_eq!(
            ob.done, ob.appended,
            "nothing left: everything counts as done"
        );
    }
}
