//! A durable session journals what the broker routes to it as it is routed
//! (`Session::persist`), so a publisher's acknowledgement covers messages still waiting in
//! the session's queue. Each test reads back what a restart would recover, from a copy of
//! the journal.

use std::sync::Arc;

use fogline_broker::{
    Batch, Broker, BrokerConfig, BrokerError, Handoff, QueueConfig, SlowConsumerPolicy, StorageMode,
};
use fogline_wire::RecordBlock;

use crate::session::{Session, SubEntry};
use crate::shared::Shared;
use crate::store::entry::SubRecord;
use crate::store::{Recovered, Store};
use crate::MqttConfig;
use fogline_auth::AllowAll;

/// A node whose subscription queues take `max_records` under `policy`, whose sessions hold
/// `max_queued` messages, with a durable session "c" (online) subscribed to `t/#` at QoS 1
/// and nothing pumped yet.
async fn node_with(
    dir: &std::path::Path,
    max_records: usize,
    policy: SlowConsumerPolicy,
    max_queued: usize,
) -> Node {
    let (store, recovered) = Store::open(&dir.join("mqtt"), false).unwrap();
    let config = BrokerConfig {
        storage: StorageMode::Memory,
        data_dir: dir.to_path_buf(),
        subscriptions: QueueConfig {
            max_records,
            policy,
            ..QueueConfig::default()
        },
        ..BrokerConfig::default()
    };
    let mqtt = MqttConfig {
        slow_subscriber: policy,
        max_queued,
        ..MqttConfig::default()
    };
    let broker = Broker::open(config).unwrap().0;
    let shared = Shared::new(broker, mqtt, Arc::new(AllowAll), Some((store, recovered)));
    let session = durable_session(&shared, "c").await;
    Node { shared, session }
}

async fn node(dir: &std::path::Path, max_records: usize, policy: SlowConsumerPolicy) -> Node {
    node_with(dir, max_records, policy, 100_000).await
}

/// A durable session `id` (online, expiry 600) subscribed to `t/#` at QoS 1.
async fn durable_session(shared: &Arc<Shared>, id: &str) -> Arc<Session> {
    let (session, _, _, _) = shared.attach(id, None, true, 600).await.unwrap();
    let rec = SubRecord {
        key: "t/#".into(),
        qos: 1,
        no_local: false,
        retain_as_published: false,
        retain_handling: 0,
        sub_id: None,
        interest: None,
    };
    let sub = shared.broker_subscribe(&session, &rec).unwrap();
    {
        let mut st = session.state.lock();
        st.subs.insert(rec.key.clone(), SubEntry::new(sub, rec));
        session.journal_session(shared, &mut st).unwrap();
    }
    session
}

struct Node {
    shared: Arc<Shared>,
    session: Arc<Session>,
}

impl Node {
    /// Publishes `body` as a native acknowledged publisher does (a record without QoS
    /// header counts as QoS 1): stored, then delivered; Ok is the acknowledgement.
    async fn publish(&self, body: &str) -> Result<(), BrokerError> {
        let stored = self.shared.broker.store_acked(batch(body))?;
        self.shared.broker.deliver(stored, Handoff::Queue).await
    }

    /// Publishes `m-{i}` for each `i`, every one acknowledged.
    async fn publish_all(&self, range: std::ops::RangeInclusive<u32>) {
        for body in bodies(range) {
            self.publish(&body).await.unwrap();
        }
    }

    fn pump(&self) {
        pump(&self.shared, &self.session);
    }

    fn pending(&self) -> Vec<(u64, String)> {
        let st = self.session.state.lock();
        st.pending
            .iter()
            .map(|o| (o.seq, String::from_utf8_lossy(&o.msg.payload).into_owned()))
            .collect()
    }
}

fn batch(body: &str) -> Batch {
    Batch {
        topic: "t/x".into(),
        records: RecordBlock::from_records([(0u64, &b""[..], body.as_bytes())]).unwrap(),
        timestamp: fogline_broker::now_micros(),
        priority: false,
        origin: 0,
    }
}

fn pump(shared: &Shared, session: &Session) {
    let mut st = session.state.lock();
    session.pump(shared, &mut st);
}

/// What a restart would recover for "c": its messages by sequence number.
fn recovered(dir: &std::path::Path) -> Vec<(u64, String)> {
    recovered_of(dir, "c")
}

/// What a restart would recover for session `id`.
fn recovered_of(dir: &std::path::Path, id: &str) -> Vec<(u64, String)> {
    let copy = tempfile::tempdir().unwrap();
    std::fs::create_dir(copy.path().join("mqtt")).unwrap();
    std::fs::copy(
        dir.join("mqtt/state.log"),
        copy.path().join("mqtt/state.log"),
    )
    .unwrap();
    let (_, r): (Store, Recovered) = Store::open(&copy.path().join("mqtt"), false).unwrap();
    let session = &r.sessions[id];
    assert_eq!(session.expiry, 600);
    session
        .msgs
        .iter()
        .map(|(seq, m)| (*seq, String::from_utf8_lossy(&m.msg.payload).into_owned()))
        .collect()
}

fn bodies(range: std::ops::RangeInclusive<u32>) -> Vec<String> {
    range.map(|i| format!("m-{i}")).collect()
}

fn just_bodies(v: &[(u64, String)]) -> Vec<String> {
    v.iter().map(|(_, b)| b.clone()).collect()
}

/// Acknowledged while the session has not taken them from its queue: journaled all the
/// same; taken later, they keep their sequence numbers and are not journaled again.
#[tokio::test]
async fn messages_waiting_in_the_queue_are_journaled_when_routed() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path(), 1000, SlowConsumerPolicy::Block).await;
    node.publish_all(1..=10).await;
    assert!(node.pending().is_empty(), "still in the broker queue");
    let before = recovered(dir.path());
    assert_eq!(just_bodies(&before), bodies(1..=10));
    node.pump();
    assert_eq!(
        node.pending(),
        before,
        "taken with the same sequence numbers"
    );
    assert_eq!(recovered(dir.path()), before, "and not journaled twice");
}

/// A durable session whose journal cannot take the message refuses the acknowledgement;
/// the message is queued for it all the same (a retry costs a duplicate, not a loss).
#[tokio::test]
async fn a_message_a_durable_session_cannot_journal_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path(), 1000, SlowConsumerPolicy::Block).await;
    node.publish("m-1").await.unwrap();
    node.shared.store.as_ref().unwrap().break_for_test();
    let refused = node.publish("m-2").await;
    assert!(
        matches!(refused, Err(BrokerError::Io { .. })),
        "{refused:?}"
    );
    node.pump();
    assert_eq!(just_bodies(&node.pending()), bodies(1..=2));
}

/// Batches the queue drops (drop-oldest) are gone from the journal too once the session
/// sees they will never come; those it takes keep their journaled numbers.
#[tokio::test]
async fn batches_the_queue_drops_leave_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path(), 3, SlowConsumerPolicy::DropOldest).await;
    node.publish_all(1..=10).await;
    assert_eq!(just_bodies(&recovered(dir.path())), bodies(1..=10));
    node.pump();
    assert_eq!(just_bodies(&node.pending()), bodies(8..=10));
    assert_eq!(recovered(dir.path()), node.pending());
}

/// An unsubscribed filter's queued messages leave the journal with it.
#[tokio::test]
async fn an_unsubscribed_filters_queued_messages_leave_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path(), 1000, SlowConsumerPolicy::Block).await;
    node.publish_all(1..=3).await;
    assert_eq!(just_bodies(&recovered(dir.path())), bodies(1..=3));
    {
        let mut st = node.session.state.lock();
        let e = st.subs.remove("t/#").unwrap();
        node.shared.broker.unsubscribe(&e.sub);
        node.session.forget_persisted(&node.shared, &mut st, &e);
    }
    assert!(recovered(dir.path()).is_empty());
}

/// A whole-session write (after a failed one, and so a compaction's snapshot) holds the
/// messages journaled as routed that still wait in the queue.
#[tokio::test]
async fn a_whole_session_write_holds_the_queued_messages() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path(), 1000, SlowConsumerPolicy::Block).await;
    node.publish_all(1..=4).await;
    let before = recovered(dir.path());
    {
        let mut st = node.session.state.lock();
        st.resync = true;
        node.session.journal_session(&node.shared, &mut st).unwrap();
    }
    assert_eq!(recovered(dir.path()), before);
}

/// A batch routed to two durable sessions that both drop it (drop-oldest) leaves both
/// journals: neither's record of it keeps it alive for the other.
#[tokio::test]
async fn a_batch_two_sessions_drop_leaves_both_journals() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path(), 3, SlowConsumerPolicy::DropOldest).await;
    let other = durable_session(&node.shared, "d").await;
    node.publish_all(1..=10).await;
    node.pump();
    pump(&node.shared, &other);
    assert_eq!(just_bodies(&recovered(dir.path())), bodies(8..=10));
    assert_eq!(just_bodies(&recovered_of(dir.path(), "d")), bodies(8..=10));
}

/// A connected session that holds `max_queued` messages takes nothing from its queue, but
/// still deletes from the journal what the queue dropped (else it grows without bound).
#[tokio::test]
async fn a_full_session_still_deletes_what_its_queue_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let node = node_with(dir.path(), 3, SlowConsumerPolicy::DropOldest, 1).await;
    node.publish("m-1").await.unwrap();
    node.pump();
    assert_eq!(just_bodies(&node.pending()), bodies(1..=1));
    node.publish_all(2..=10).await;
    node.pump();
    assert_eq!(
        just_bodies(&node.pending()),
        bodies(1..=1),
        "full: takes none"
    );
    let mut kept = bodies(1..=1);
    kept.extend(bodies(8..=10));
    assert_eq!(just_bodies(&recovered(dir.path())), kept);
}

/// A batch routed to a subscription the session has replaced since (same filter, a new
/// broker subscription) goes to the old, closed queue: it is not journaled.
#[tokio::test]
async fn a_batch_for_a_replaced_subscription_is_not_journaled() {
    let dir = tempfile::tempdir().unwrap();
    let node = node(dir.path(), 1000, SlowConsumerPolicy::Block).await;
    let b = Arc::new(batch("m-1"));
    let mut st = node.session.state.lock();
    let current = st.subs["t/#"].sub.id();
    node.session
        .persist(&node.shared, &mut st, ("t/#", current + 1), &b)
        .unwrap();
    assert!(st.subs["t/#"].persisted.is_empty());
    drop(st);
    assert!(recovered(dir.path()).is_empty());
}

/// What a journal's bytes replay to, comparable: retained messages and sessions by id.
fn state_of(journal: &[u8]) -> String {
    let r = crate::store::replay(journal);
    assert_eq!(r.discarded, 0, "a whole journal");
    r.comparable()
}

/// One step of a workload on two durable sessions, "c" (`session`) and "d".
#[derive(Clone, Debug)]
enum Step {
    /// Publish this many acknowledged messages to `t/x`.
    Publish(u8),
    /// Session "c" or "d" takes from its queue.
    Pump(bool),
    /// "c" is done with its oldest taken message (acknowledged, or dropped as if delivered).
    Done,
    /// "c" unsubscribes `t/#` and subscribes it again.
    Resubscribe,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        (1u8..5).prop_map(Step::Publish),
        any::<bool>().prop_map(Step::Pump),
        Just(Step::Done),
        Just(Step::Resubscribe),
    ]
}

async fn run_step(node: &Node, other: &Arc<Session>, s: &Step, n: &mut u32) {
    match s {
        Step::Publish(k) => {
            for _ in 0..*k {
                *n += 1;
                node.publish(&format!("m-{n}")).await.unwrap();
            }
        }
        Step::Pump(true) => node.pump(),
        Step::Pump(false) => pump(&node.shared, other),
        Step::Done => {
            let mut st = node.session.state.lock();
            if let Some(o) = st.pending.pop_front() {
                node.session.journal_done(&node.shared, &mut st, o.seq);
            }
        }
        Step::Resubscribe => {
            let mut st = node.session.state.lock();
            let e = st.subs.remove("t/#").unwrap();
            node.shared.broker.unsubscribe(&e.sub);
            node.session.forget_persisted(&node.shared, &mut st, &e);
            let sub = node.shared.broker_subscribe(&node.session, &e.rec).unwrap();
            st.subs
                .insert(e.rec.key.clone(), SubEntry::new(sub, e.rec.clone()));
            node.session.journal_session(&node.shared, &mut st).unwrap();
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// The claim a compaction rests on (`Shared::snapshot`, read from memory): after any
    /// workload of routing, queue drops (drop-oldest, a full session), takes, acks and
    /// resubscribes, the snapshot replays to the state the journal replays to.
    #[test]
    fn the_snapshot_from_memory_replays_to_the_journals_state(
        steps in proptest::collection::vec(step(), 1..40),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let node = node_with(dir.path(), 3, SlowConsumerPolicy::DropOldest, 4).await;
            let other = durable_session(&node.shared, "d").await;
            let mut n = 0;
            for s in &steps {
                run_step(&node, &other, s, &mut n).await;
                let journal = std::fs::read(dir.path().join("mqtt/state.log")).unwrap();
                assert_eq!(
                    state_of(&node.shared.snapshot()),
                    state_of(&journal),
                    "after {s:?}"
                );
            }
        });
    }
}
