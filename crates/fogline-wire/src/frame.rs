//! The frames of the native protocol and their kind numbers.
//!
//! Every frame on the wire is `len: u32` (bytes after this field) |
//! `kind: u8` | body, integers little-endian. Kind numbers are stable and
//! never reused. Bodies are listed on each [`Frame`] variant in wire order.

use crate::admin::{ConsumerDetail, StreamDetail, StreamSpec};
use crate::error::ErrorCode;
use crate::records::RecordBlock;
use crate::stored::StoredBlock;
use crate::text::Str;

/// Frame kind numbers.
pub mod kind {
    /// C->S handshake.
    pub const HELLO: u8 = 0x01;
    /// S->C handshake answer.
    pub const HELLO_OK: u8 = 0x02;
    /// Either way: liveness probe.
    pub const PING: u8 = 0x03;
    /// Either way: answer to a ping.
    pub const PONG: u8 = 0x04;
    /// C->S records for one topic.
    pub const PUBLISH: u8 = 0x10;
    /// S->C publish acknowledged.
    pub const PUB_ACK: u8 = 0x11;
    /// C->S live subscription.
    pub const SUBSCRIBE: u8 = 0x20;
    /// S->C subscription accepted.
    pub const SUB_OK: u8 = 0x21;
    /// C->S end a subscription.
    pub const UNSUBSCRIBE: u8 = 0x22;
    /// S->C live records.
    pub const DELIVER: u8 = 0x23;
    /// C->S live subscription by interest profile.
    pub const SUBSCRIBE_PROFILE: u8 = 0x24;
    /// C->S open a consumer on a stream.
    pub const CONSUMER_OPEN: u8 = 0x30;
    /// S->C consumer opened.
    pub const CONSUMER_OK: u8 = 0x31;
    /// C->S pull records.
    pub const FETCH: u8 = 0x32;
    /// S->C stored records (fetched or pushed).
    pub const RECORDS: u8 = 0x33;
    /// C->S allow more pushed records.
    pub const CREDIT: u8 = 0x34;
    /// C->S acknowledge offsets.
    pub const ACK: u8 = 0x35;
    /// C->S close a consumer.
    pub const CONSUMER_CLOSE: u8 = 0x36;
    /// C->S list streams.
    pub const STREAM_LIST: u8 = 0x40;
    /// S->C the streams.
    pub const STREAM_LIST_OK: u8 = 0x41;
    /// C->S create a stream.
    pub const STREAM_CREATE: u8 = 0x42;
    /// C->S change a stream's subjects or retention.
    pub const STREAM_UPDATE: u8 = 0x43;
    /// C->S drop every record of a stream.
    pub const STREAM_PURGE: u8 = 0x44;
    /// C->S delete a stream.
    pub const STREAM_DELETE: u8 = 0x45;
    /// C->S describe one stream.
    pub const STREAM_GET: u8 = 0x46;
    /// S->C one stream, as it is after the request.
    pub const STREAM_OK: u8 = 0x47;
    /// C->S list consumers.
    pub const CONSUMER_LIST: u8 = 0x48;
    /// S->C the consumers.
    pub const CONSUMER_LIST_OK: u8 = 0x49;
    /// C->S delete a durable consumer.
    pub const CONSUMER_DELETE: u8 = 0x4A;
    /// S->C a request without other answer succeeded.
    pub const DONE: u8 = 0x4B;
    /// C->S register a producer's data profile (notify_interest).
    pub const ANNOUNCE: u8 = 0x50;
    /// S->C whether somebody is interested in an announced producer.
    pub const NOTICE: u8 = 0x51;
    /// C->S withdraw an announcement.
    pub const WITHDRAW: u8 = 0x52;
    /// C->S query the store by profile.
    pub const QUERY: u8 = 0x54;
    /// S->C a page of stored records.
    pub const QUERY_OK: u8 = 0x55;
    /// C->S delete stored records from the store.
    pub const DELETE: u8 = 0x56;
    /// S->C how many were deleted.
    pub const DELETED: u8 = 0x57;
    /// S->C a request failed.
    pub const ERROR: u8 = 0x7F;
}

/// Flag bit of `Publish`, `Subscribe` and `Deliver`: high priority.
pub const FLAG_HIGH_PRIORITY: u8 = 0x01;

/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u16 = 1;

/// Where a consumer starts reading its stream.
///
/// Wire: `start: u8` then `start_value: u64` (0 unless `Offset`/`Time`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StartPosition {
    /// 0: the oldest retained record.
    Earliest,
    /// 1: only records appended from now on.
    Latest,
    /// 2: this offset (clamped by the server to what is retained).
    Offset(u64),
    /// 3: the first record at or after this time (microseconds since epoch).
    Time(u64),
    /// 4: a durable consumer's stored position, else `Earliest`.
    Resume,
}

impl StartPosition {
    /// The `(start, start_value)` pair on the wire.
    pub fn to_wire(self) -> (u8, u64) {
        match self {
            StartPosition::Earliest => (0, 0),
            StartPosition::Latest => (1, 0),
            StartPosition::Offset(v) => (2, v),
            StartPosition::Time(v) => (3, v),
            StartPosition::Resume => (4, 0),
        }
    }

    /// From the wire pair; `None` for an unknown `start`. The value is
    /// ignored where the position does not use it.
    pub fn from_wire(start: u8, value: u64) -> Option<StartPosition> {
        Some(match start {
            0 => StartPosition::Earliest,
            1 => StartPosition::Latest,
            2 => StartPosition::Offset(value),
            3 => StartPosition::Time(value),
            4 => StartPosition::Resume,
            _ => return None,
        })
    }
}

/// How a stream keeps its records. Wire: `u8`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// 0: in memory only.
    Memory,
    /// 1: memory-mapped files (survives a process crash).
    Mmap,
    /// 2: memory-mapped files, fsynced (survives power loss).
    Fsync,
}

impl Storage {
    /// The wire number.
    pub fn as_u8(self) -> u8 {
        match self {
            Storage::Memory => 0,
            Storage::Mmap => 1,
            Storage::Fsync => 2,
        }
    }

    /// From the wire number; `None` when unknown.
    pub fn from_u8(v: u8) -> Option<Storage> {
        match v {
            0 => Some(Storage::Memory),
            1 => Some(Storage::Mmap),
            2 => Some(Storage::Fsync),
            _ => None,
        }
    }
}

/// One stream in a `StreamListOk`.
///
/// Wire: `name: str16, storage: u8, subjects: u16 count x str16,
/// first_offset: u64, next_offset: u64, records: u64, bytes: u64,
/// segments: u32, consumers: u32`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamInfo {
    /// Stream name.
    pub name: Str,
    /// Storage mode.
    pub storage: Storage,
    /// Subject filters the stream captures.
    pub subjects: Vec<Str>,
    /// Oldest retained offset.
    pub first_offset: u64,
    /// Offset the next record will get.
    pub next_offset: u64,
    /// Records retained.
    pub records: u64,
    /// Bytes retained.
    pub bytes: u64,
    /// Segment files.
    pub segments: u32,
    /// Consumers open on it.
    pub consumers: u32,
}

/// A user name and password, as Hello carries them.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user name.
    pub username: Str,
    /// The password (never printed by `Debug`).
    pub password: Str,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"***")
            .finish()
    }
}

/// A decoded (or to-be-encoded) frame. Byte fields are zero-copy slices of
/// the buffer the frame was decoded from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// 0x01 C->S `{version: u16, client_name: str16, [username: str16, password: str16]}`.
    Hello {
        /// Protocol version ([`PROTOCOL_VERSION`]).
        version: u16,
        /// Free-form client name, for logs.
        client_name: Str,
        /// User name and password; `None` (nothing after the name on the wire): anonymous.
        credentials: Option<Credentials>,
    },
    /// 0x02 S->C `{version: u16, server_name: str16, max_message: u32, max_frame: u32}`.
    HelloOk {
        /// Protocol version the server speaks.
        version: u16,
        /// Free-form server name.
        server_name: Str,
        /// Largest record payload+headers the server accepts.
        max_message: u32,
        /// Largest frame (kind + body) the server accepts.
        max_frame: u32,
    },
    /// 0x03 `{nonce: u64}`.
    Ping {
        /// Echoed in the Pong.
        nonce: u64,
    },
    /// 0x04 `{nonce: u64}`.
    Pong {
        /// The Ping's nonce.
        nonce: u64,
    },
    /// 0x10 C->S `{request_id: u64, flags: u8, topic: str16, count: u32, records}`.
    Publish {
        /// 0 = no ack wanted, else answered by `PubAck` or `Error`.
        request_id: u64,
        /// Bit 0: high priority.
        flags: u8,
        /// Topic of every record in the block.
        topic: Str,
        /// The records (count is on the wire before them).
        records: RecordBlock,
    },
    /// 0x11 S->C `{request_id: u64, count: u32}`.
    PubAck {
        /// The Publish's request id.
        request_id: u64,
        /// Records accepted.
        count: u32,
    },
    /// 0x20 C->S `{sub_id: u32, flags: u8, filter: str16}`.
    Subscribe {
        /// Chosen by the client, unique on the connection.
        sub_id: u32,
        /// Bit 0: high priority.
        flags: u8,
        /// Topic filter with MQTT `+`/`#` wildcards.
        filter: Str,
    },
    /// 0x24 C->S `{sub_id: u32, flags: u8, filter: str16, interest: str16}`: records on
    /// topics `filter` matches whose data profile satisfies `interest` (docs/PROFILES.md,
    /// terms only). Answered and delivered as `Subscribe`.
    SubscribeProfile {
        /// Chosen by the client, unique on the connection.
        sub_id: u32,
        /// Bit 0: high priority.
        flags: u8,
        /// Topic filter with MQTT `+`/`#` wildcards.
        filter: Str,
        /// The interest profile's terms, in text form.
        interest: Str,
    },
    /// 0x21 S->C `{sub_id: u32}`.
    SubOk {
        /// The subscription accepted.
        sub_id: u32,
    },
    /// 0x22 C->S `{sub_id: u32}`.
    Unsubscribe {
        /// The subscription to end.
        sub_id: u32,
    },
    /// 0x23 S->C `{sub_id: u32, flags: u8, batch_timestamp: u64, dropped: u32,
    /// topic: str16, count: u32, records}`.
    Deliver {
        /// The subscription.
        sub_id: u32,
        /// Bit 0: high priority.
        flags: u8,
        /// Server receive time; records with timestamp 0 take it.
        batch_timestamp: u64,
        /// Records dropped for this subscription since the last Deliver.
        dropped: u32,
        /// Topic of every record in the block.
        topic: Str,
        /// The publisher's records, verbatim.
        records: RecordBlock,
    },
    /// 0x30 C->S `{request_id: u64, stream: str16, name: str16, filter: str16,
    /// start: u8, start_value: u64, ack_timeout_ms: u32, max_inflight: u32, push_credit: u32}`.
    ConsumerOpen {
        /// Answered by `ConsumerOk` or `Error`.
        request_id: u64,
        /// Stream name.
        stream: Str,
        /// Empty = ephemeral, else durable (position persisted).
        name: Str,
        /// Topic filter; empty = everything.
        filter: Str,
        /// Where to start.
        start: StartPosition,
        /// 0 = auto-ack on delivery; else redeliver unacked after this.
        ack_timeout_ms: u32,
        /// Most unacked records outstanding.
        max_inflight: u32,
        /// 0 = pull via Fetch; >0 = push up to this many, then wait for Credit.
        push_credit: u32,
    },
    /// 0x31 S->C `{request_id: u64, consumer_id: u32, next_offset: u64}`.
    ConsumerOk {
        /// The ConsumerOpen's request id.
        request_id: u64,
        /// Server-assigned id.
        consumer_id: u32,
        /// Offset the consumer will read next.
        next_offset: u64,
    },
    /// 0x32 C->S `{consumer_id: u32, max_records: u32, max_wait_ms: u32}`.
    Fetch {
        /// The consumer.
        consumer_id: u32,
        /// At most this many records.
        max_records: u32,
        /// Wait this long for at least one record.
        max_wait_ms: u32,
    },
    /// 0x33 S->C `{consumer_id: u32, count: u32, records}`.
    Records {
        /// The consumer.
        consumer_id: u32,
        /// The records (possibly none).
        records: StoredBlock,
    },
    /// 0x34 C->S `{consumer_id: u32, credit: u32}`.
    Credit {
        /// The consumer.
        consumer_id: u32,
        /// Further records the server may push.
        credit: u32,
    },
    /// 0x35 C->S `{consumer_id: u32, count: u32, offsets: count x u64}`.
    Ack {
        /// The consumer.
        consumer_id: u32,
        /// Offsets processed.
        offsets: Vec<u64>,
    },
    /// 0x36 C->S `{consumer_id: u32}`.
    ConsumerClose {
        /// The consumer.
        consumer_id: u32,
    },
    /// 0x40 C->S `{request_id: u64}`.
    StreamList {
        /// Answered by `StreamListOk`.
        request_id: u64,
    },
    /// 0x41 S->C `{request_id: u64, count: u16, streams: count x StreamInfo}`.
    StreamListOk {
        /// The StreamList's request id.
        request_id: u64,
        /// The streams.
        streams: Vec<StreamInfo>,
    },
    /// 0x42 C->S `{request_id: u64, spec: StreamSpec}`.
    StreamCreate {
        /// Answered by `StreamOk` or `Error`.
        request_id: u64,
        /// The stream.
        spec: StreamSpec,
    },
    /// 0x43 C->S `{request_id: u64, name: str16, fields: u8, subjects: u16 count x str16,
    /// retention_bytes: u64, retention_age_ms: u64}`; `fields` bit 0: subjects, bit 1:
    /// retention_bytes, bit 2: retention_age_ms are given (others: send 0 or no subjects).
    StreamUpdate {
        /// Answered by `StreamOk` or `Error`.
        request_id: u64,
        /// The stream.
        name: Str,
        /// New subject filters.
        subjects: Option<Vec<Str>>,
        /// New retention by size ([`NODE_DEFAULT`](crate::NODE_DEFAULT): the node's; 0: none).
        retention_bytes: Option<u64>,
        /// New retention by age, ms ([`NODE_DEFAULT`](crate::NODE_DEFAULT): the node's; 0: none).
        retention_age_ms: Option<u64>,
    },
    /// 0x44 C->S `{request_id: u64, name: str16}`.
    StreamPurge {
        /// Answered by `StreamOk` or `Error`.
        request_id: u64,
        /// The stream.
        name: Str,
    },
    /// 0x45 C->S `{request_id: u64, name: str16}`.
    StreamDelete {
        /// Answered by `Done` or `Error`.
        request_id: u64,
        /// The stream.
        name: Str,
    },
    /// 0x46 C->S `{request_id: u64, name: str16}`.
    StreamGet {
        /// Answered by `StreamOk` or `Error`.
        request_id: u64,
        /// The stream.
        name: Str,
    },
    /// 0x47 S->C `{request_id: u64, stream: StreamDetail}`.
    StreamOk {
        /// The request's id.
        request_id: u64,
        /// The stream as it is now.
        stream: StreamDetail,
    },
    /// 0x48 C->S `{request_id: u64, stream: str16, name: str16}`: every consumer of every
    /// stream (`stream` empty), of one stream, or one durable consumer (`name`).
    ConsumerList {
        /// Answered by `ConsumerListOk` or `Error`.
        request_id: u64,
        /// The stream; empty: every stream.
        stream: Str,
        /// A durable consumer's name; empty: all of them.
        name: Str,
    },
    /// 0x49 S->C `{request_id: u64, count: u32, consumers: count x ConsumerDetail}`.
    ConsumerListOk {
        /// The request's id.
        request_id: u64,
        /// The consumers.
        consumers: Vec<ConsumerDetail>,
    },
    /// 0x4A C->S `{request_id: u64, stream: str16, name: str16}`.
    ConsumerDelete {
        /// Answered by `Done` or `Error`.
        request_id: u64,
        /// The stream.
        stream: Str,
        /// The durable consumer.
        name: Str,
    },
    /// 0x4B S->C `{request_id: u64}`.
    Done {
        /// The request's id.
        request_id: u64,
    },
    /// 0x50 C->S `{request_id: u64, topic: str16, profile: str16}`: the client would publish
    /// records of this data profile on this topic (notify_interest). Answered by a `Notice`
    /// with the current state, then one on every change, until `Withdraw` or the end of the
    /// connection; or by `Error`.
    Announce {
        /// Chosen by the client, unique on the connection among its announcements.
        request_id: u64,
        /// The topic it would publish on.
        topic: Str,
        /// Its data profile, in text form.
        profile: Str,
    },
    /// 0x51 S->C `{request_id: u64, interested: u8}`: 1 when somebody wants what the
    /// announcement `request_id` would publish (start sending), 0 when nobody does (stop).
    Notice {
        /// The announcement.
        request_id: u64,
        /// Whether somebody is interested.
        interested: bool,
    },
    /// 0x52 C->S `{request_id: u64}`: ends the announcement; answered by `Done`.
    Withdraw {
        /// The announcement.
        request_id: u64,
    },
    /// 0x54 C->S `{request_id: u64, stream: str16, interest: str16, since: u64, until: u64,
    /// latest_by: str16, limit: u32, after: u64, flags: u8}`: the stored records of `stream`
    /// whose profile and topic `interest` matches (text form, `@topic` allowed), at or after
    /// `since` and at or before `until` (microseconds; 0 and `u64::MAX`: open), the newest
    /// per value of `latest_by` (empty: every one), at most `limit` of them, past offset
    /// `after` (`u64::MAX`: from the start); flags bit 0: newest first. Answered by
    /// `QueryOk` or `Error`.
    Query {
        /// Chosen by the client.
        request_id: u64,
        /// The indexed stream; empty: the store's only one, or `default`.
        stream: Str,
        /// The interest profile.
        interest: Str,
        /// Earliest timestamp, 0: none.
        since: u64,
        /// Latest timestamp, `u64::MAX`: none.
        until: u64,
        /// Latest-per-key attribute; empty: none.
        latest_by: Str,
        /// Page size.
        limit: u32,
        /// Paging cursor, `u64::MAX`: none.
        after: u64,
        /// Bit 0: newest first.
        flags: u8,
    },
    /// 0x55 S->C `{request_id: u64, next: u64, count: u32, count x StoredRecord}`: one page;
    /// `next` is the next page's `after`, `u64::MAX` when this was the last.
    QueryOk {
        /// The Query's id.
        request_id: u64,
        /// The next page's cursor, `u64::MAX`: none.
        next: u64,
        /// The records (delivery_count 1).
        records: StoredBlock,
    },
    /// 0x56 C->S `{request_id: u64, stream: str16, interest: str16, since: u64, until: u64}`:
    /// R-Pulsar's delete: the stored records a `Query` with these fields would select are
    /// forgotten by the store (durably; the log keeps them until its retention). Answered by
    /// `Deleted` or `Error`.
    Delete {
        /// Chosen by the client.
        request_id: u64,
        /// The indexed stream; empty: the store's only one, or `default`.
        stream: Str,
        /// The interest profile.
        interest: Str,
        /// Earliest timestamp, 0: none.
        since: u64,
        /// Latest timestamp, `u64::MAX`: none.
        until: u64,
    },
    /// 0x57 S->C `{request_id: u64, count: u64}`.
    Deleted {
        /// The Delete's id.
        request_id: u64,
        /// Records deleted.
        count: u64,
    },
    /// 0x7F S->C `{request_id: u64, code: u16, message: str16}`.
    Error {
        /// The request id / sub_id / consumer_id answered, 0 if none.
        request_id: u64,
        /// Stable code.
        code: ErrorCode,
        /// Human-readable detail.
        message: Str,
    },
}

impl Frame {
    /// The frame's kind number.
    pub fn kind(&self) -> u8 {
        match self {
            Frame::Hello { .. } => kind::HELLO,
            Frame::HelloOk { .. } => kind::HELLO_OK,
            Frame::Ping { .. } => kind::PING,
            Frame::Pong { .. } => kind::PONG,
            Frame::Publish { .. } => kind::PUBLISH,
            Frame::PubAck { .. } => kind::PUB_ACK,
            Frame::Subscribe { .. } => kind::SUBSCRIBE,
            Frame::SubOk { .. } => kind::SUB_OK,
            Frame::Unsubscribe { .. } => kind::UNSUBSCRIBE,
            Frame::Deliver { .. } => kind::DELIVER,
            Frame::ConsumerOpen { .. } => kind::CONSUMER_OPEN,
            Frame::ConsumerOk { .. } => kind::CONSUMER_OK,
            Frame::Fetch { .. } => kind::FETCH,
            Frame::Records { .. } => kind::RECORDS,
            Frame::Credit { .. } => kind::CREDIT,
            Frame::Ack { .. } => kind::ACK,
            Frame::ConsumerClose { .. } => kind::CONSUMER_CLOSE,
            Frame::StreamList { .. } => kind::STREAM_LIST,
            Frame::StreamListOk { .. } => kind::STREAM_LIST_OK,
            Frame::StreamCreate { .. } => kind::STREAM_CREATE,
            Frame::StreamUpdate { .. } => kind::STREAM_UPDATE,
            Frame::StreamPurge { .. } => kind::STREAM_PURGE,
            Frame::StreamDelete { .. } => kind::STREAM_DELETE,
            Frame::StreamGet { .. } => kind::STREAM_GET,
            Frame::StreamOk { .. } => kind::STREAM_OK,
            Frame::ConsumerList { .. } => kind::CONSUMER_LIST,
            Frame::ConsumerListOk { .. } => kind::CONSUMER_LIST_OK,
            Frame::ConsumerDelete { .. } => kind::CONSUMER_DELETE,
            Frame::Done { .. } => kind::DONE,
            Frame::SubscribeProfile { .. } => kind::SUBSCRIBE_PROFILE,
            Frame::Announce { .. } => kind::ANNOUNCE,
            Frame::Notice { .. } => kind::NOTICE,
            Frame::Withdraw { .. } => kind::WITHDRAW,
            Frame::Query { .. } => kind::QUERY,
            Frame::QueryOk { .. } => kind::QUERY_OK,
            Frame::Delete { .. } => kind::DELETE,
            Frame::Deleted { .. } => kind::DELETED,
            Frame::Error { .. } => kind::ERROR,
        }
    }

    /// An `Error` frame.
    pub fn error(request_id: u64, code: ErrorCode, message: impl Into<Str>) -> Frame {
        Frame::Error {
            request_id,
            code,
            message: message.into(),
        }
    }
}
