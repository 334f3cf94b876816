//! Journal entries and their encoding.
//!
//! Body layouts (integers little-endian; `str` = u16 length + UTF-8,
//! `blob` = u32 length + bytes; `msg` = topic str | headers blob (the
//! record header block of [`crate::message`]) | payload blob | received u64):
//!
//! | kind | entry | fields |
//! | --- | --- | --- |
//! | 1 | RetainSet | msg |
//! | 2 | RetainDel | topic str |
//! | 3 | SessionPut | client str, expiry u32, n u16, n x {key str, qos u8, flags u8 (1 no local, 2 retain as published, 4 interest), retain handling u8, sub id u32 (0 none), [interest str]}, [owner str] |
//! | 4 | SessionDel | client str |
//! | 5 | MsgPut | client str, seq u64, qos u8, retain u8, n u8, n x sub id u32, msg |
//! | 6 | MsgSent | client str, seq u64, pkid u16 |
//! | 7 | MsgRel | client str, seq u64 |
//! | 8 | MsgDel | client str, seq u64 |
//! | 9 | Qos2In | client str, pkid u16 |
//! | 10 | Qos2Done | client str, pkid u16 |
//!
//! A SessionPut subscription with flag 4 set is followed by its interest profile (the
//! `fogline-interest` user property of its SUBSCRIBE, in the text form of
//! `docs/PROFILES.md`); without it, nothing follows the sub id. Journals written before
//! interests existed never set the flag, so they read as they always did. The owner (the user
//! the session was created by) ends the body when there is one; journals written before
//! owners existed end after the subscriptions, and read as sessions without an owner.

use bytes::Bytes;
use fogline_wire::Str;

use crate::message::Message;

/// One subscription of a persistent session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubRecord {
    /// The filter as subscribed (including any `$share/group/`).
    pub key: String,
    /// Granted QoS.
    pub qos: u8,
    /// No local.
    pub no_local: bool,
    /// Retain as published.
    pub retain_as_published: bool,
    /// Retain handling.
    pub retain_handling: u8,
    /// Subscription identifier.
    pub sub_id: Option<u32>,
    /// Interest profile (text form, with terms and no topic), or `None`: every record.
    pub interest: Option<String>,
}

/// A journal entry.
#[derive(Clone, Debug)]
#[allow(missing_docs)] // see the table in the module header
pub enum Entry<'a> {
    RetainSet(&'a Message),
    RetainDel(&'a str),
    SessionPut {
        client: &'a str,
        expiry: u32,
        subs: &'a [SubRecord],
        owner: Option<&'a str>,
    },
    SessionDel(&'a str),
    MsgPut {
        client: &'a str,
        seq: u64,
        qos: u8,
        retain: bool,
        sub_ids: &'a [u32],
        msg: &'a Message,
    },
    MsgSent {
        client: &'a str,
        seq: u64,
        pkid: u16,
    },
    MsgRel {
        client: &'a str,
        seq: u64,
    },
    MsgDel {
        client: &'a str,
        seq: u64,
    },
    Qos2In {
        client: &'a str,
        pkid: u16,
    },
    Qos2Done {
        client: &'a str,
        pkid: u16,
    },
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    // Topics, client ids and filters are at most 65535 bytes by protocol.
    let n = s.len().min(usize::from(u16::MAX));
    b.extend_from_slice(&(n as u16).to_le_bytes());
    b.extend_from_slice(&s.as_bytes()[..n]);
}

fn put_blob(b: &mut Vec<u8>, v: &[u8]) {
    b.extend_from_slice(&(v.len() as u32).to_le_bytes());
    b.extend_from_slice(v);
}

fn put_msg(b: &mut Vec<u8>, m: &Message) {
    put_str(b, &m.topic);
    put_blob(b, &m.headers().unwrap_or_default());
    put_blob(b, &m.payload);
    b.extend_from_slice(&m.received.to_le_bytes());
}

impl Entry<'_> {
    /// Appends `len | crc | body`.
    pub fn frame_into(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; 8]);
        self.body_into(out);
        let body = &out[start + 8..];
        let len = body.len() as u32;
        let crc = crc32fast::hash(body);
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
        out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    }

    fn body_into(&self, b: &mut Vec<u8>) {
        match self {
            Entry::RetainSet(m) => {
                b.push(1);
                put_msg(b, m);
            }
            Entry::RetainDel(t) => {
                b.push(2);
                put_str(b, t);
            }
            Entry::SessionPut {
                client,
                expiry,
                subs,
                owner,
            } => {
                b.push(3);
                put_str(b, client);
                b.extend_from_slice(&expiry.to_le_bytes());
                b.extend_from_slice(&(subs.len().min(usize::from(u16::MAX)) as u16).to_le_bytes());
                for s in subs.iter().take(usize::from(u16::MAX)) {
                    put_str(b, &s.key);
                    b.push(s.qos);
                    b.push(
                        u8::from(s.no_local)
                            | u8::from(s.retain_as_published) << 1
                            | u8::from(s.interest.is_some()) << 2,
                    );
                    b.push(s.retain_handling);
                    b.extend_from_slice(&s.sub_id.unwrap_or(0).to_le_bytes());
                    if let Some(i) = &s.interest {
                        put_str(b, i);
                    }
                }
                if let Some(o) = owner {
                    put_str(b, o);
                }
            }
            Entry::SessionDel(c) => {
                b.push(4);
                put_str(b, c);
            }
            Entry::MsgPut {
                client,
                seq,
                qos,
                retain,
                sub_ids,
                msg,
            } => {
                b.push(5);
                put_str(b, client);
                b.extend_from_slice(&seq.to_le_bytes());
                b.push(*qos);
                b.push(u8::from(*retain));
                let n = sub_ids.len().min(255);
                b.push(n as u8);
                for id in &sub_ids[..n] {
                    b.extend_from_slice(&id.to_le_bytes());
                }
                put_msg(b, msg);
            }
            Entry::MsgSent { client, seq, pkid } => {
                b.push(6);
                put_str(b, client);
                b.extend_from_slice(&seq.to_le_bytes());
                b.extend_from_slice(&pkid.to_le_bytes());
            }
            Entry::MsgRel { client, seq } | Entry::MsgDel { client, seq } => {
                b.push(if matches!(self, Entry::MsgRel { .. }) {
                    7
                } else {
                    8
                });
                put_str(b, client);
                b.extend_from_slice(&seq.to_le_bytes());
            }
            Entry::Qos2In { client, pkid } | Entry::Qos2Done { client, pkid } => {
                b.push(if matches!(self, Entry::Qos2In { .. }) {
                    9
                } else {
                    10
                });
                put_str(b, client);
                b.extend_from_slice(&pkid.to_le_bytes());
            }
        }
    }
}

/// A cursor for decoding bodies; `None` past the end.
pub(crate) struct Cur<'a> {
    pub b: &'a [u8],
}

impl Cur<'_> {
    pub fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.b.len() < n {
            return None;
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Some(h)
    }
    pub fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|s| s[0])
    }
    pub fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|s| u16::from_le_bytes([s[0], s[1]]))
    }
    pub fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
    pub fn u64(&mut self) -> Option<u64> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Some(u64::from_le_bytes(a))
    }
    pub fn string(&mut self) -> Option<String> {
        let n = self.u16()?;
        let s = self.take(usize::from(n))?;
        std::str::from_utf8(s).ok().map(str::to_string)
    }
    pub fn blob(&mut self) -> Option<Bytes> {
        let n = self.u32()?;
        self.take(n as usize).map(Bytes::copy_from_slice)
    }
    pub fn msg(&mut self) -> Option<Message> {
        let topic = Str::from(self.string()?);
        let headers = self.blob()?;
        let payload = self.blob()?;
        let received = self.u64()?;
        Some(Message::from_record(topic, headers, payload, received))
    }
}
