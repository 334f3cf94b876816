//! Kafka's consumer-group offset requests, which rskafka lacks: a pure codec (bytes in,
//! values out) of exactly three of them, each in a version that is not "flexible" (no tagged
//! fields) and that Kafka accepts from 2.0 through 4.x:
//!
//! | request | key | version | since Kafka |
//! | --- | --- | --- | --- |
//! | FindCoordinator | 10 | 1 | 0.11 |
//! | OffsetCommit | 8 | 2 | 0.9 (the oldest 4.0 keeps) |
//! | OffsetFetch | 9 | 2 | 0.10.2 |
//! | SaslHandshake | 17 | 1 | 1.0 |
//! | SaslAuthenticate | 36 | 1 | 2.0 |
//!
//! (the last two open a connection to a SASL listener, KIP-152)
//!
//! Layout (kafka.apache.org/protocol): a request is `size: i32`, the header v1
//! `api_key: i16, api_version: i16, correlation_id: i32, client_id: nullable string`, then its
//! body; a response is `size: i32, correlation_id: i32`, then its body. Integers are
//! big-endian; a string is an `i16` length and UTF-8 (length -1: null); an array an `i32`
//! count (-1: null) and its items.

use thiserror::Error;

/// FindCoordinator's API key.
pub const FIND_COORDINATOR: i16 = 10;
/// OffsetCommit's API key.
pub const OFFSET_COMMIT: i16 = 8;
/// OffsetFetch's API key.
pub const OFFSET_FETCH: i16 = 9;
/// SaslHandshake's API key.
pub const SASL_HANDSHAKE: i16 = 17;
/// SaslAuthenticate's API key.
pub const SASL_AUTHENTICATE: i16 = 36;

/// A response that cannot be read.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum CodecError {
    /// It ends before the named field.
    #[error("Kafka response truncated at {0}")]
    Truncated(&'static str),
    /// The named field holds what it cannot.
    #[error("Kafka response: invalid {0}")]
    Invalid(&'static str),
    /// It answers another request.
    #[error("Kafka response to request {got}, expected {want}")]
    Correlation {
        /// The request sent.
        want: i32,
        /// The request answered.
        got: i32,
    },
}

/// FindCoordinator's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coordinator {
    /// Kafka's error code (0: none).
    pub error: i16,
    /// Kafka's explanation of it, if any.
    pub message: Option<String>,
    /// The coordinator's broker id.
    pub node_id: i32,
    /// Its host.
    pub host: String,
    /// Its port.
    pub port: i32,
}

/// One partition in OffsetCommit's or OffsetFetch's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionAnswer {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: i32,
    /// The committed offset (OffsetFetch; -1: none); -1 in OffsetCommit's answer.
    pub offset: i64,
    /// Kafka's error code for this partition (0: none).
    pub error: i16,
}

/// OffsetFetch's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// Per partition.
    pub partitions: Vec<PartitionAnswer>,
    /// Kafka's error code for the whole group (0: none).
    pub error: i16,
}

/// SaslHandshake's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mechanisms {
    /// Kafka's error code (0: the mechanism asked for is enabled).
    pub error: i16,
    /// The mechanisms the listener takes.
    pub mechanisms: Vec<String>,
}

/// SaslAuthenticate's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthAnswer {
    /// Kafka's error code (0: none).
    pub error: i16,
    /// Kafka's explanation of it, if any.
    pub message: Option<String>,
    /// The mechanism's next message from the server.
    pub auth_bytes: Vec<u8>,
}

struct Writer(Vec<u8>);

impl Writer {
    /// A request frame with its size left to fill in [`Writer::finish`].
    fn request(api_key: i16, version: i16, correlation: i32, client_id: &str) -> Writer {
        let mut w = Writer(Vec::with_capacity(64));
        w.i32(0);
        w.i16(api_key);
        w.i16(version);
        w.i32(correlation);
        w.string(client_id);
        w
    }
    fn i16(&mut self, v: i16) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn i32(&mut self, v: i32) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_be_bytes());
    }
    /// Strings longer than an `i16` length are cut (group ids and topic names never are:
    /// Kafka caps them far below).
    fn string(&mut self, s: &str) {
        let b = &s.as_bytes()[..s.len().min(i16::MAX as usize)];
        self.i16(b.len() as i16);
        self.0.extend_from_slice(b);
    }
    fn len(&mut self, n: usize) {
        self.i32(i32::try_from(n).unwrap_or(i32::MAX));
    }
    fn finish(mut self) -> Vec<u8> {
        let size = (self.0.len() - 4) as i32;
        self.0[..4].copy_from_slice(&size.to_be_bytes());
        self.0
    }
}

/// SaslHandshake v1 asking for `mechanism`.
pub fn sasl_handshake(correlation: i32, client_id: &str, mechanism: &str) -> Vec<u8> {
    let mut w = Writer::request(SASL_HANDSHAKE, 1, correlation, client_id);
    w.string(mechanism);
    w.finish()
}

/// SaslAuthenticate v1 carrying the mechanism's message `auth`.
pub fn sasl_authenticate(correlation: i32, client_id: &str, auth: &[u8]) -> Vec<u8> {
    let mut w = Writer::request(SASL_AUTHENTICATE, 1, correlation, client_id);
    w.len(auth.len());
    w.0.extend_from_slice(auth);
    w.finish()
}

/// FindCoordinator v1 for the consumer group `group` (key type 0).
pub fn find_coordinator(correlation: i32, client_id: &str, group: &str) -> Vec<u8> {
    let mut w = Writer::request(FIND_COORDINATOR, 1, correlation, client_id);
    w.string(group);
    w.0.push(0);
    w.finish()
}

/// OffsetCommit v2 of `offsets` (topic, then partition and the next offset to read) for
/// `group`, as a consumer that assigns itself its partitions commits: generation -1, no
/// member id, the broker's retention (-1).
pub fn offset_commit(
    correlation: i32,
    client_id: &str,
    group: &str,
    offsets: &[(String, Vec<(i32, i64)>)],
) -> Vec<u8> {
    let mut w = Writer::request(OFFSET_COMMIT, 2, correlation, client_id);
    w.string(group);
    w.i32(-1);
    w.string("");
    w.i64(-1);
    w.len(offsets.len());
    for (topic, parts) in offsets {
        w.string(topic);
        w.len(parts.len());
        for &(p, offset) in parts {
            w.i32(p);
            w.i64(offset);
            // Metadata: null.
            w.i16(-1);
        }
    }
    w.finish()
}

/// OffsetFetch v2 of `topics`' partitions for `group`.
pub fn offset_fetch(
    correlation: i32,
    client_id: &str,
    group: &str,
    topics: &[(String, Vec<i32>)],
) -> Vec<u8> {
    let mut w = Writer::request(OFFSET_FETCH, 2, correlation, client_id);
    w.string(group);
    w.len(topics.len());
    for (topic, parts) in topics {
        w.string(topic);
        w.len(parts.len());
        for &p in parts {
            w.i32(p);
        }
    }
    w.finish()
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], CodecError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or(CodecError::Truncated(field))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn i16(&mut self, field: &'static str) -> Result<i16, CodecError> {
        let b = self.take(2, field)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self, field: &'static str) -> Result<i32, CodecError> {
        let b = self.take(4, field)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i64(&mut self, field: &'static str) -> Result<i64, CodecError> {
        let b = self.take(8, field)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }
    fn nullable_string(&mut self, field: &'static str) -> Result<Option<String>, CodecError> {
        let n = self.i16(field)?;
        if n < 0 {
            return Ok(None);
        }
        let b = self.take(n as usize, field)?;
        std::str::from_utf8(b)
            .map(|s| Some(s.to_string()))
            .map_err(|_| CodecError::Invalid(field))
    }
    fn string(&mut self, field: &'static str) -> Result<String, CodecError> {
        self.nullable_string(field)?
            .ok_or(CodecError::Invalid(field))
    }
    /// An array's count (null: none); each item takes at least `min_item` bytes, so a
    /// count the rest cannot hold is refused before anything is allocated for it.
    fn count(&mut self, field: &'static str, min_item: usize) -> Result<usize, CodecError> {
        let n = self.i32(field)?;
        if n < 0 {
            return Ok(0);
        }
        let n = n as usize;
        if n.saturating_mul(min_item) > self.buf.len() - self.pos {
            return Err(CodecError::Truncated(field));
        }
        Ok(n)
    }
    fn end(&self) -> Result<(), CodecError> {
        if self.pos == self.buf.len() {
            Ok(())
        } else {
            Err(CodecError::Invalid("trailing bytes"))
        }
    }
}

/// The body of a response frame (its size prefix already taken off), checked to answer
/// request `correlation`.
///
/// # Errors
/// Too short, or it answers another request.
pub fn response_body(frame: &[u8], correlation: i32) -> Result<&[u8], CodecError> {
    let mut r = Reader { buf: frame, pos: 0 };
    let got = r.i32("correlation id")?;
    if got != correlation {
        return Err(CodecError::Correlation {
            want: correlation,
            got,
        });
    }
    Ok(&frame[4..])
}

/// FindCoordinator v1's answer.
///
/// # Errors
/// A body that is not one.
pub fn decode_find_coordinator(body: &[u8]) -> Result<Coordinator, CodecError> {
    let mut r = Reader { buf: body, pos: 0 };
    r.i32("throttle time")?;
    let c = Coordinator {
        error: r.i16("error code")?,
        message: r.nullable_string("error message")?,
        node_id: r.i32("node id")?,
        host: r.string("host")?,
        port: r.i32("port")?,
    };
    r.end()?;
    Ok(c)
}

/// SaslHandshake v1's answer.
///
/// # Errors
/// A body that is not one.
pub fn decode_sasl_handshake(body: &[u8]) -> Result<Mechanisms, CodecError> {
    let mut r = Reader { buf: body, pos: 0 };
    let error = r.i16("error code")?;
    let mut mechanisms = Vec::new();
    for _ in 0..r.count("mechanisms", 2)? {
        mechanisms.push(r.string("mechanism")?);
    }
    r.end()?;
    Ok(Mechanisms { error, mechanisms })
}

/// SaslAuthenticate v1's answer.
///
/// # Errors
/// A body that is not one.
pub fn decode_sasl_authenticate(body: &[u8]) -> Result<AuthAnswer, CodecError> {
    let mut r = Reader { buf: body, pos: 0 };
    let error = r.i16("error code")?;
    let message = r.nullable_string("error message")?;
    let n = r.i32("auth bytes")?;
    let auth_bytes = match usize::try_from(n) {
        Ok(n) => r.take(n, "auth bytes")?.to_vec(),
        Err(_) => Vec::new(),
    };
    r.i64("session lifetime")?;
    r.end()?;
    Ok(AuthAnswer {
        error,
        message,
        auth_bytes,
    })
}

/// OffsetCommit v2's answer: each partition's error code.
///
/// # Errors
/// A body that is not one.
pub fn decode_offset_commit(body: &[u8]) -> Result<Vec<PartitionAnswer>, CodecError> {
    let mut r = Reader { buf: body, pos: 0 };
    let mut out = Vec::new();
    for _ in 0..r.count("topics", 6)? {
        let topic = r.string("topic")?;
        for _ in 0..r.count("partitions", 6)? {
            out.push(PartitionAnswer {
                topic: topic.clone(),
                partition: r.i32("partition")?,
                offset: -1,
                error: r.i16("error code")?,
            });
        }
    }
    r.end()?;
    Ok(out)
}

/// OffsetFetch v2's answer.
///
/// # Errors
/// A body that is not one.
pub fn decode_offset_fetch(body: &[u8]) -> Result<Fetched, CodecError> {
    let mut r = Reader { buf: body, pos: 0 };
    let mut partitions = Vec::new();
    for _ in 0..r.count("topics", 6)? {
        let topic = r.string("topic")?;
        for _ in 0..r.count("partitions", 16)? {
            let partition = r.i32("partition")?;
            let offset = r.i64("committed offset")?;
            r.nullable_string("metadata")?;
            partitions.push(PartitionAnswer {
                topic: topic.clone(),
                partition,
                offset,
                error: r.i16("error code")?,
            });
        }
    }
    let error = r.i16("error code")?;
    r.end()?;
    Ok(Fetched { partitions, error })
}

#[cfg(test)]
mod tests;
