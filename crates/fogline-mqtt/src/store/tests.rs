//! The journal's replay and compaction, against a model and on disk.

use bytes::Bytes;
use proptest::prelude::*;

use super::entry::SubRecord;
use super::replay::replay;
use super::*;
use crate::codec::QoS;
use crate::message::Message;

fn msg(topic: &str, payload: u8) -> Message {
    Message {
        topic: topic.into(),
        payload: Bytes::from(vec![payload; 3]),
        qos: QoS::AtLeastOnce,
        retain: false,
        props: Default::default(),
        received: 7,
    }
}

/// One journal entry over a small domain, so that keys collide often.
#[derive(Clone, Debug)]
enum Op {
    RetainSet(u8, u8),
    RetainDel(u8),
    SessionPut(u8, u32, u8),
    SessionDel(u8),
    MsgPut(u8, u64, u8),
    MsgSent(u8, u64, u16),
    MsgRel(u8, u64),
    MsgDel(u8, u64),
    Qos2In(u8, u16),
    Qos2Done(u8, u16),
}

fn op() -> impl Strategy<Value = Op> {
    let c = 0..2u8;
    prop_oneof![
        (0..2u8, any::<u8>()).prop_map(|(t, p)| Op::RetainSet(t, p)),
        (0..2u8).prop_map(Op::RetainDel),
        (c.clone(), 0..3u32, 0..3u8).prop_map(|(c, e, s)| Op::SessionPut(c, e, s)),
        c.clone().prop_map(Op::SessionDel),
        (c.clone(), 1..4u64, any::<u8>()).prop_map(|(c, s, p)| Op::MsgPut(c, s, p)),
        (c.clone(), 1..4u64, 1..4u16).prop_map(|(c, s, k)| Op::MsgSent(c, s, k)),
        (c.clone(), 1..4u64).prop_map(|(c, s)| Op::MsgRel(c, s)),
        (c.clone(), 1..4u64).prop_map(|(c, s)| Op::MsgDel(c, s)),
        (c.clone(), 1..4u16).prop_map(|(c, k)| Op::Qos2In(c, k)),
        (c, 1..4u16).prop_map(|(c, k)| Op::Qos2Done(c, k)),
    ]
}

fn frame(ops: &[Op]) -> Vec<u8> {
    const CLIENTS: [&str; 2] = ["a", "b"];
    const TOPICS: [&str; 2] = ["t/0", "t/1"];
    let subs: Vec<Vec<SubRecord>> = (0..3)
        .map(|n| {
            (0..n)
                .map(|i| SubRecord {
                    key: format!("f/{i}"),
                    qos: 1,
                    no_local: false,
                    retain_as_published: false,
                    retain_handling: 0,
                    sub_id: None,
                    interest: None,
                })
                .collect()
        })
        .collect();
    let mut out = Vec::new();
    for op in ops {
        let c = |i: &u8| CLIENTS[usize::from(*i)];
        match op {
            Op::RetainSet(t, p) => {
                Entry::RetainSet(&msg(TOPICS[usize::from(*t)], *p)).frame_into(&mut out)
            }
            Op::RetainDel(t) => Entry::RetainDel(TOPICS[usize::from(*t)]).frame_into(&mut out),
            Op::SessionPut(i, expiry, s) => Entry::SessionPut {
                client: c(i),
                expiry: *expiry,
                subs: &subs[usize::from(*s)],
                owner: (*s == 1).then_some("alice"),
            }
            .frame_into(&mut out),
            Op::SessionDel(i) => Entry::SessionDel(c(i)).frame_into(&mut out),
            Op::MsgPut(i, seq, p) => Entry::MsgPut {
                client: c(i),
                seq: *seq,
                qos: 1,
                retain: false,
                sub_ids: &[],
                msg: &msg("m", *p),
            }
            .frame_into(&mut out),
            Op::MsgSent(i, seq, pkid) => Entry::MsgSent {
                client: c(i),
                seq: *seq,
                pkid: *pkid,
            }
            .frame_into(&mut out),
            Op::MsgRel(i, seq) => Entry::MsgRel {
                client: c(i),
                seq: *seq,
            }
            .frame_into(&mut out),
            Op::MsgDel(i, seq) => Entry::MsgDel {
                client: c(i),
                seq: *seq,
            }
            .frame_into(&mut out),
            Op::Qos2In(i, pkid) => Entry::Qos2In {
                client: c(i),
                pkid: *pkid,
            }
            .frame_into(&mut out),
            Op::Qos2Done(i, pkid) => Entry::Qos2Done {
                client: c(i),
                pkid: *pkid,
            }
            .frame_into(&mut out),
        }
    }
    out
}

/// The state a journal gives, comparable.
fn state(bytes: &[u8]) -> String {
    replay(bytes).comparable()
}

fn snapshot_of(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in replay(bytes).snapshot() {
        e.frame_into(&mut out);
    }
    out
}

proptest! {
    /// The claim compaction rests on: a snapshot taken at any point after the copy
    /// began, followed by the whole copy, replays to the state of the whole journal.
    #[test]
    fn a_snapshot_then_the_copy_replays_to_the_whole_journal(
        ops in proptest::collection::vec(op(), 0..40),
        begin in 0usize..40,
        taken in 0usize..40,
    ) {
        let begin = begin.min(ops.len());
        let taken = taken.clamp(begin, ops.len());
        let mut compacted = snapshot_of(&frame(&ops[..taken]));
        compacted.extend_from_slice(&frame(&ops[begin..]));
        prop_assert_eq!(state(&compacted), state(&frame(&ops)));
    }
}

#[test]
fn compaction_waits_for_its_size_and_keeps_what_is_appended_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, _) = Store::open(dir.path(), false).unwrap();
    store.set_compact_min(1); // raised to MIN_COMPACT
    let puts: Vec<Op> = (0..=255u8).map(|p| Op::RetainSet(p % 2, p)).collect();
    store.append_framed(&frame(&puts[..5])).unwrap();
    assert!(!store.begin_compaction(), "below compact_min");
    store.append_framed(&frame(&puts[5..])).unwrap();
    assert!(store.len() >= MIN_COMPACT, "{}", store.len());
    assert!(store.begin_compaction());
    assert!(!store.begin_compaction(), "one at a time");
    let snapshot = snapshot_of(&frame(&puts));
    store
        .append_framed(&frame(&[Op::RetainSet(0, 200)]))
        .unwrap();
    let len = store.finish_compaction(&snapshot).unwrap();
    store.append_framed(&frame(&[Op::MsgPut(1, 1, 9)])).unwrap();
    assert!(len < 1000, "{len}");
    assert!(!store.begin_compaction(), "not yet past compact_min again");
    drop(store);
    let mut all = puts.clone();
    all.push(Op::RetainSet(0, 200));
    all.push(Op::MsgPut(1, 1, 9));
    let on_disk = std::fs::read(dir.path().join("state.log")).unwrap();
    assert_eq!(state(&on_disk), state(&frame(&all)));
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("state.log")]);
    let (_, recovered) = Store::open(dir.path(), false).unwrap();
    assert_eq!(recovered.retained["t/0"].payload[..], [200; 3]);
    assert_eq!(recovered.discarded, 0);
}

#[test]
fn a_failed_compaction_leaves_the_journal_whole_and_waits_to_retry() {
    let dir = tempfile::tempdir().unwrap();
    let (mut store, _) = Store::open(dir.path(), false).unwrap();
    store.set_compact_min(MIN_COMPACT);
    let ops: Vec<Op> = (0..=255u8).map(|p| Op::RetainSet(p % 2, p)).collect();
    store.append_framed(&frame(&ops)).unwrap();
    assert!(store.begin_compaction());
    store.abandon_compaction();
    assert!(store.finish_compaction(&[]).is_err(), "nothing to finish");
    assert!(
        !store.begin_compaction(),
        "a failure is retried once the journal grows by compact_min, not at once"
    );
    let more: Vec<Op> = (0..=255u8).map(|p| Op::RetainSet(p % 2, 255 - p)).collect();
    store.append_framed(&frame(&more)).unwrap();
    store.append_framed(&frame(&[Op::RetainDel(0)])).unwrap();
    let on_disk = std::fs::read(dir.path().join("state.log")).unwrap();
    let mut all = ops.clone();
    all.extend(more);
    all.push(Op::RetainDel(0));
    assert_eq!(state(&on_disk), state(&frame(&all)));
    assert!(store.begin_compaction(), "may begin again");
}
