//! fogline's native protocol: frames and their codec (pure: no I/O, no async).
//!
//! Wire format: every frame is `len: u32` (bytes after this field) |
//! `kind: u8` | body; integers are little-endian, `str16` is a u16 length
//! plus UTF-8, `blob32` a u32 length plus bytes. Each [`Frame`] variant
//! documents its body; kind numbers are in [`kind`] and error codes in
//! [`ErrorCode`], both stable and never reused. The conversation rules
//! (who answers what) are in the crate's `PROTOCOL.md`.
//!
//! Modules:
//! - `frame`: the [`Frame`] enum, kind numbers, [`StartPosition`], [`StreamInfo`].
//! - `admin`: the bodies of the management frames ([`StreamSpec`], [`StreamDetail`],
//!   [`ConsumerDetail`]).
//! - `decode` / `encode`: [`decode`] (streaming, from a read buffer),
//!   [`decode_frame`] (one whole frame) and [`encode`].
//! - `records`: publish/deliver [`RecordBlock`]s, the hot-path
//!   [`RecordBlockWriter`] and [`encode_deliver`].
//! - `stored`: consumer [`StoredBlock`]s, [`RecordsWriter`], [`encode_records`].
//! - `headers`: record header blocks ([`Headers`], [`HeadersBuilder`]).
//! - `topic`: MQTT topic/filter rules and [`filter_matches`].
//!
//! ```
//! use bytes::BytesMut;
//! use fogline_wire::{decode, encode, Frame};
//! let mut buf = BytesMut::new();
//! encode(&Frame::Ping { nonce: 7 }, &mut buf)?;
//! assert_eq!(decode(&mut buf, 1 << 20)?, Some(Frame::Ping { nonce: 7 }));
//! # Ok::<(), fogline_wire::WireError>(())
//! ```
#![deny(missing_docs)]

mod admin;
mod codec;
mod decode;
mod encode;
mod error;
mod frame;
mod headers;
pub mod readbuf;
mod records;
mod stored;
mod text;
mod topic;

pub use admin::{ConsumerDetail, StreamDetail, StreamSpec, NODE_DEFAULT};
pub use decode::{decode, decode_frame, reserve_read, RESERVE_AHEAD};
pub use encode::encode;
pub use error::{ErrorCode, WireError};
pub use frame::{
    kind, Credentials, Frame, StartPosition, Storage, StreamInfo, FLAG_HIGH_PRIORITY,
    PROTOCOL_VERSION,
};
pub use headers::{header_entries, HeaderEntries, Headers, HeadersBuilder, HeadersIter};
pub use records::{
    encode_deliver, encode_deliver_header, encode_publish_header, Record, RecordBlock,
    RecordBlockWriter, RecordIter, RecordRef, RecordRefIter,
};
pub use stored::{
    encode_records, RecordsWriter, StoredBlock, StoredIter, StoredRecord, StoredRecordRef,
};
pub use text::Str;
pub use topic::{filter_matches, validate_filter, validate_topic, TopicError, MAX_LEVELS};
