//! Replays a journal into the state it describes, stopping at the first
//! torn or corrupt entry.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::entry::{Cur, Entry, SubRecord};
use crate::message::Message;

/// A queued or inflight message of a recovered session.
#[derive(Clone, Debug)]
pub struct RecoveredMsg {
    /// Delivery QoS.
    pub qos: u8,
    /// Retain flag to deliver with.
    pub retain: bool,
    /// Subscription identifiers to deliver with.
    pub sub_ids: Vec<u32>,
    /// The message.
    pub msg: Message,
    /// Packet id once sent.
    pub pkid: Option<u16>,
    /// PUBREC received (QoS 2): only PUBREL is resent.
    pub released: bool,
}

/// A recovered persistent session.
#[derive(Clone, Debug, Default)]
pub struct RecoveredSession {
    /// Session expiry interval, seconds.
    pub expiry: u32,
    /// The user who created it (`None`: anonymous, or journaled before owners were).
    pub owner: Option<String>,
    /// Subscriptions.
    pub subs: Vec<SubRecord>,
    /// Messages by sequence number.
    pub msgs: BTreeMap<u64, RecoveredMsg>,
    /// Incoming QoS 2 packet ids not yet released.
    pub qos2_in: BTreeSet<u16>,
}

/// Everything a journal held.
#[derive(Debug, Default)]
pub struct Recovered {
    /// Retained messages by topic.
    pub retained: BTreeMap<String, Message>,
    /// Sessions by client id.
    pub sessions: HashMap<String, RecoveredSession>,
    /// Entries applied.
    pub entries: usize,
    /// Bytes cut off a torn or corrupt tail.
    pub discarded: usize,
}

impl Recovered {
    /// The state, comparable between two replays: retained messages and sessions by id
    /// (what a restart restores; not the counts of entries and discarded bytes).
    #[cfg(test)]
    pub(crate) fn comparable(&self) -> String {
        let sessions: BTreeMap<_, _> = self.sessions.iter().collect();
        format!("{:?} {:?}", self.retained, sessions)
    }

    /// Entries that rebuild this state.
    pub fn snapshot(&self) -> Vec<Entry<'_>> {
        let mut out = Vec::new();
        for m in self.retained.values() {
            out.push(Entry::RetainSet(m));
        }
        for (client, s) in &self.sessions {
            out.push(Entry::SessionPut {
                client,
                expiry: s.expiry,
                subs: &s.subs,
                owner: s.owner.as_deref(),
            });
            for (&seq, m) in &s.msgs {
                out.push(Entry::MsgPut {
                    client,
                    seq,
                    qos: m.qos,
                    retain: m.retain,
                    sub_ids: &m.sub_ids,
                    msg: &m.msg,
                });
                if let Some(pkid) = m.pkid {
                    out.push(Entry::MsgSent { client, seq, pkid });
                }
                if m.released {
                    out.push(Entry::MsgRel { client, seq });
                }
            }
            for &pkid in &s.qos2_in {
                out.push(Entry::Qos2In { client, pkid });
            }
        }
        out
    }
}

/// Rebuilds the state of a journal.
pub fn replay(bytes: &[u8]) -> Recovered {
    let mut r = Recovered::default();
    let mut pos = 0;
    while pos < bytes.len() {
        let Some(head) = bytes.get(pos..pos + 8) else {
            break;
        };
        let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let crc = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        let Some(body) = bytes.get(pos + 8..(pos + 8).saturating_add(len)) else {
            break;
        };
        if crc32fast::hash(body) != crc || apply(&mut r, body).is_none() {
            break;
        }
        r.entries += 1;
        pos += 8 + len;
    }
    r.discarded = bytes.len() - pos;
    r
}

fn apply(r: &mut Recovered, body: &[u8]) -> Option<()> {
    let mut c = Cur { b: body };
    match c.u8()? {
        1 => {
            let m = c.msg()?;
            r.retained.insert(m.topic.to_string(), m);
        }
        2 => {
            r.retained.remove(&c.string()?);
        }
        3 => {
            let client = c.string()?;
            let expiry = c.u32()?;
            let n = c.u16()?;
            let mut subs = Vec::with_capacity(usize::from(n));
            for _ in 0..n {
                let key = c.string()?;
                let qos = c.u8()?;
                let flags = c.u8()?;
                let retain_handling = c.u8()?;
                let id = c.u32()?;
                let interest = if flags & 4 != 0 {
                    Some(c.string()?)
                } else {
                    None
                };
                subs.push(SubRecord {
                    key,
                    qos,
                    no_local: flags & 1 != 0,
                    retain_as_published: flags & 2 != 0,
                    retain_handling,
                    sub_id: (id != 0).then_some(id),
                    interest,
                });
            }
            let owner = if c.b.is_empty() {
                None
            } else {
                Some(c.string()?)
            };
            let s = r.sessions.entry(client).or_default();
            s.expiry = expiry;
            s.subs = subs;
            s.owner = owner;
        }
        4 => {
            r.sessions.remove(&c.string()?);
        }
        5 => {
            let client = c.string()?;
            let seq = c.u64()?;
            let qos = c.u8()?;
            let retain = c.u8()? != 0;
            let n = c.u8()?;
            let mut sub_ids = Vec::new();
            for _ in 0..n {
                sub_ids.push(c.u32()?);
            }
            let msg = c.msg()?;
            let m = RecoveredMsg {
                qos,
                retain,
                sub_ids,
                msg,
                pkid: None,
                released: false,
            };
            r.sessions.entry(client).or_default().msgs.insert(seq, m);
        }
        6 => {
            let client = c.string()?;
            let seq = c.u64()?;
            let pkid = c.u16()?;
            if let Some(m) = r
                .sessions
                .get_mut(&client)
                .and_then(|s| s.msgs.get_mut(&seq))
            {
                m.pkid = Some(pkid);
            }
        }
        7 => {
            let client = c.string()?;
            let seq = c.u64()?;
            if let Some(m) = r
                .sessions
                .get_mut(&client)
                .and_then(|s| s.msgs.get_mut(&seq))
            {
                m.released = true;
            }
        }
        8 => {
            let client = c.string()?;
            let seq = c.u64()?;
            if let Some(s) = r.sessions.get_mut(&client) {
                s.msgs.remove(&seq);
            }
        }
        9 | 10 => {
            let add = body[0] == 9;
            let client = c.string()?;
            let pkid = c.u16()?;
            let s = r.sessions.entry(client).or_default();
            if add {
                s.qos2_in.insert(pkid);
            } else {
                s.qos2_in.remove(&pkid);
            }
        }
        _ => return None,
    }
    if c.b.is_empty() {
        Some(())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::codec::QoS;

    fn msg(topic: &str) -> Message {
        Message {
            topic: topic.into(),
            payload: Bytes::from_static(b"p"),
            qos: QoS::ExactlyOnce,
            retain: false,
            props: Default::default(),
            received: 7,
        }
    }

    #[test]
    fn journal_replays_and_torn_tail_is_cut() {
        let m = msg("a/b");
        let subs = [SubRecord {
            key: "a/#".into(),
            qos: 2,
            no_local: true,
            retain_as_published: false,
            retain_handling: 1,
            sub_id: Some(9),
            interest: None,
        }];
        let mut j = Vec::new();
        for e in [
            Entry::RetainSet(&m),
            Entry::SessionPut {
                client: "c",
                expiry: 60,
                subs: &subs,
                owner: Some("alice"),
            },
            Entry::MsgPut {
                client: "c",
                seq: 1,
                qos: 2,
                retain: false,
                sub_ids: &[9],
                msg: &m,
            },
            Entry::MsgPut {
                client: "c",
                seq: 2,
                qos: 1,
                retain: false,
                sub_ids: &[],
                msg: &m,
            },
            Entry::MsgSent {
                client: "c",
                seq: 1,
                pkid: 5,
            },
            Entry::MsgRel {
                client: "c",
                seq: 1,
            },
            Entry::MsgDel {
                client: "c",
                seq: 2,
            },
            Entry::Qos2In {
                client: "c",
                pkid: 3,
            },
        ] {
            e.frame_into(&mut j);
        }
        let whole = j.len();
        Entry::RetainDel("a/b").frame_into(&mut j);
        let r = replay(&j[..whole]);
        assert_eq!(r.entries, 8);
        assert_eq!(r.retained["a/b"], m);
        let s = &r.sessions["c"];
        assert_eq!(s.subs, subs);
        assert_eq!(s.owner.as_deref(), Some("alice"));
        assert_eq!(s.msgs.len(), 1);
        assert_eq!(s.msgs[&1].pkid, Some(5));
        assert!(s.msgs[&1].released);
        assert!(s.qos2_in.contains(&3));
        for cut in whole + 1..j.len() {
            let t = replay(&j[..cut]);
            assert_eq!(t.entries, 8, "cut {cut}");
            assert_eq!(t.discarded, cut - whole);
        }
        assert!(replay(&j).retained.is_empty());
        let mut snap = Vec::new();
        for e in r.snapshot() {
            e.frame_into(&mut snap);
        }
        let again = replay(&snap);
        assert_eq!(again.sessions["c"].msgs[&1].pkid, Some(5));
        assert_eq!(again.retained.len(), 1);
    }

    /// A subscription's interest is journaled after its sub id, flagged by bit 2 of its
    /// flags; a SessionPut without the flag (as journals before interests were written)
    /// reads as before.
    #[test]
    fn a_subscription_interest_is_journaled_and_old_entries_still_read() {
        let with = |interest: Option<&str>| SubRecord {
            key: "site/#".into(),
            qos: 1,
            no_local: false,
            retain_as_published: true,
            retain_handling: 0,
            sub_id: None,
            interest: interest.map(str::to_string),
        };
        let subs = [with(Some("sensor=li* alt=100..500")), with(None)];
        let mut j = Vec::new();
        Entry::SessionPut {
            client: "c",
            expiry: 60,
            subs: &subs[..1],
            owner: None,
        }
        .frame_into(&mut j);
        assert_eq!(replay(&j).sessions["c"].subs, subs[..1]);

        // Golden bytes of the body: kind, client, expiry, count, then the subscription.
        let mut body = vec![3, 1, 0, b'c', 60, 0, 0, 0, 1, 0, 6, 0];
        body.extend_from_slice(b"site/#");
        body.extend_from_slice(&[1, 2 | 4, 0, 0, 0, 0, 0, 23, 0]);
        body.extend_from_slice(b"sensor=li* alt=100..500");
        assert_eq!(&j[8..], &body[..]);

        // The layout before interests: flags without bit 2, nothing after the sub id.
        let mut old = vec![3, 1, 0, b'c', 60, 0, 0, 0, 1, 0, 6, 0];
        old.extend_from_slice(b"site/#");
        old.extend_from_slice(&[1, 2, 0, 0, 0, 0, 0]);
        let mut framed = Vec::new();
        framed.extend_from_slice(&(old.len() as u32).to_le_bytes());
        framed.extend_from_slice(&crc32fast::hash(&old).to_le_bytes());
        framed.extend_from_slice(&old);
        let r = replay(&framed);
        assert_eq!((r.entries, r.discarded), (1, 0));
        assert_eq!(r.sessions["c"].subs, subs[1..]);
        assert_eq!(r.sessions["c"].owner, None, "journaled before owners");
    }

    #[test]
    fn corrupt_bytes_never_panic() {
        let mut j = Vec::new();
        Entry::RetainDel("x").frame_into(&mut j);
        for i in 0..j.len() {
            let mut k = j.clone();
            k[i] ^= 0x5a;
            let _ = replay(&k);
        }
    }
}
