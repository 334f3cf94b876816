//! Routing by interest profile and notify_interest (`profiled`), against the reference
//! semantics of `fogline_profile::Interest::matches`.

use std::sync::Arc;

use fogline_broker::{Batch, Broker, BrokerConfig, Handoff, StorageMode, SubscribeOptions};
use fogline_profile::{DataProfile, Interest};
use fogline_wire::RecordBlock;
use proptest::prelude::*;
use tokio::sync::Notify;

fn broker() -> Broker {
    let config = BrokerConfig {
        storage: StorageMode::Memory,
        ..BrokerConfig::default()
    };
    Broker::open(config).unwrap().0
}

/// A batch on `topic` of one record per profile (payload = its position).
fn batch(topic: &str, profiles: &[&str], origin: u64) -> Batch {
    let blocks: Vec<Vec<u8>> = profiles
        .iter()
        .map(|p| {
            DataProfile::parse(p)
                .unwrap()
                .to_headers()
                .unwrap()
                .to_vec()
        })
        .collect();
    let payloads: Vec<Vec<u8>> = (0..profiles.len()).map(|i| vec![i as u8]).collect();
    Batch {
        topic: topic.into(),
        records: RecordBlock::from_records(
            blocks
                .iter()
                .zip(&payloads)
                .map(|(h, p)| (0, h.as_slice(), p.as_slice())),
        )
        .unwrap(),
        timestamp: 1,
        priority: false,
        origin,
    }
}

fn with_interest(text: &str) -> SubscribeOptions {
    SubscribeOptions {
        interest: Some(Interest::parse(text).unwrap()),
        ..SubscribeOptions::default()
    }
}

fn payloads(sub: &fogline_broker::Subscription) -> Vec<u8> {
    let mut got = Vec::new();
    sub.queue().drain(&mut got, usize::MAX);
    got.iter()
        .flat_map(|b| b.records.iter().map(|r| r.payload[0]))
        .collect()
}

#[tokio::test]
async fn an_interest_gets_the_matching_records_of_a_batch_and_nothing_else() {
    let b = broker();
    let waker = Arc::new(Notify::new());
    let lidar = b
        .subscribe(
            "site/#",
            0,
            with_interest("sensor=Li* alt=100.."),
            waker.clone(),
        )
        .unwrap();
    let plain = b
        .subscribe("site/#", 0, SubscribeOptions::default(), waker.clone())
        .unwrap();
    let elsewhere = b
        .subscribe("other/#", 0, with_interest("sensor"), waker.clone())
        .unwrap();
    assert_eq!(b.interest_count(), 2);
    let profiles = [
        "sensor=Lidar alt=120",
        "sensor=radar alt=120",
        "sensor=Lidar alt=50",
        "sensor=Lidar2 alt=100 urgent",
        "",
    ];
    for handoff in [Handoff::Direct, Handoff::Queue] {
        let origin = b.next_origin();
        b.publish(batch("site/a", &profiles, origin), handoff)
            .await
            .unwrap();
        b.publish_unacked(batch("site/a", &profiles, origin), handoff)
            .await
            .unwrap();
    }
    assert_eq!(payloads(&lidar), [0, 3, 0, 3, 0, 3, 0, 3]);
    assert_eq!(payloads(&plain).len(), 20);
    assert!(payloads(&elsewhere).is_empty(), "its filter does not match");
    // A batch every record of which matches is queued as it is.
    b.publish(batch("site/b", &["sensor=Li alt=101"], 1), Handoff::Queue)
        .await
        .unwrap();
    let mut got = Vec::new();
    lidar.queue().drain(&mut got, usize::MAX);
    assert_eq!(got.len(), 1);
    b.unsubscribe(&lidar);
    assert_eq!(b.interest_count(), 1);
    b.publish(batch("site/a", &profiles, 1), Handoff::Queue)
        .await
        .unwrap();
    assert!(payloads(&lidar).is_empty());
}

#[tokio::test]
async fn no_local_holds_for_interests() {
    let b = broker();
    let me = b.next_origin();
    let opts = SubscribeOptions {
        no_local: true,
        ..with_interest("k")
    };
    let sub = b.subscribe("#", me, opts, Arc::new(Notify::new())).unwrap();
    b.publish(batch("t", &["k"], me), Handoff::Queue)
        .await
        .unwrap();
    b.publish(batch("t", &["k"], me + 1), Handoff::Queue)
        .await
        .unwrap();
    assert_eq!(payloads(&sub), [0]);
    assert_eq!(
        b.stats()
            .profile_routed
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

#[tokio::test]
async fn an_interest_without_terms_is_a_plain_subscription() {
    let b = broker();
    let sub = b
        .subscribe("t", 0, with_interest("@ignored"), Arc::new(Notify::new()))
        .unwrap();
    assert!(sub.interest().is_none());
    assert_eq!(b.interest_count(), 0);
    b.publish(batch("t", &[""], 1), Handoff::Queue)
        .await
        .unwrap();
    assert_eq!(payloads(&sub), [0]);
}

#[tokio::test]
async fn a_producer_is_told_when_the_first_interest_comes_and_the_last_goes() {
    let b = broker();
    let waker = Arc::new(Notify::new());
    let profile = DataProfile::parse("type=drone sensor=lidar geo=40.0583,-74.4056").unwrap();
    let mut p = b.announce("site/nj/lidar", profile, 7).unwrap();
    assert!(!p.interested());
    let info = b.producers();
    assert_eq!(info.len(), 1);
    assert_eq!((info[0].origin, info[0].interested), (7, false));
    assert_eq!(info[0].topic, "site/nj/lidar");

    // Neither a filter that misses the topic nor an interest that misses the profile wakes it.
    let miss1 = b
        .subscribe("site/ny/#", 0, SubscribeOptions::default(), waker.clone())
        .unwrap();
    let miss2 = b
        .subscribe("#", 0, with_interest("sensor=radar"), waker.clone())
        .unwrap();
    assert!(!p.interested());

    let hit = b
        .subscribe(
            "site/#",
            0,
            with_interest("sensor=li* geo~40.05,-74.40,5km"),
            waker.clone(),
        )
        .unwrap();
    assert!(p.changed().await);
    let plain = b
        .subscribe(
            "site/+/lidar",
            0,
            SubscribeOptions::default(),
            waker.clone(),
        )
        .unwrap();
    b.unsubscribe(&hit);
    assert!(p.interested(), "the plain subscriber still wants it");
    b.unsubscribe(&plain);
    assert!(!p.changed().await);
    b.unsubscribe(&miss1);
    b.unsubscribe(&miss2);

    // A producer announced while somebody is interested starts at once.
    let _hit = b
        .subscribe("#", 0, with_interest("type=drone"), waker.clone())
        .unwrap();
    assert!(p.changed().await);
    let q = b
        .announce("site/x", DataProfile::parse("type=drone").unwrap(), 8)
        .unwrap();
    assert!(q.interested());
    drop(q);
    drop(p);
    assert!(b.producers().is_empty());
    assert!(b.announce("bad/+", DataProfile::default(), 1).is_err());
}

fn profile_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a=x",
            "a=y",
            "b=1",
            "b=2.5",
            "c",
            "g=40.05,-74.4",
            "é=ü",
        ]),
        0..4,
    )
    .prop_map(|v| v.join(" "))
}

fn interest_text() -> impl Strategy<Value = String> {
    prop::sample::subsequence(
        vec![
            "a=x",
            "a=*",
            "b=1..2",
            "b=2..",
            "c",
            "a=?",
            "g~40.05,-74.40,1km",
            "é=*",
        ],
        0..3,
    )
    .prop_map(|v| v.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Every subscription gets exactly the records the reference semantics give it, in
    /// order, whatever mix of interests and batches.
    #[test]
    fn routing_agrees_with_the_reference(
        subs in prop::collection::vec(
            (prop::sample::select(vec!["#", "s/+", "s/1", "t"]), interest_text()), 1..6),
        batches in prop::collection::vec(
            (prop::sample::select(vec!["s/1", "s/2", "t"]),
             prop::collection::vec(profile_text(), 1..5)), 1..6),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(async {
            let b = broker();
            let waker = Arc::new(Notify::new());
            let live: Vec<_> = subs
                .iter()
                .map(|(f, i)| b.subscribe(f, 0, with_interest(i), waker.clone()).unwrap())
                .collect();
            for (topic, profiles) in &batches {
                let refs: Vec<&str> = profiles.iter().map(String::as_str).collect();
                b.publish(batch(topic, &refs, 1), Handoff::Queue).await.unwrap();
            }
            for ((filter, text), sub) in subs.iter().zip(&live) {
                let mut interest = Interest::parse(text).unwrap();
                interest.topic = Some(filter.to_string());
                let mut want = Vec::new();
                for (topic, profiles) in &batches {
                    for (i, p) in profiles.iter().enumerate() {
                        if interest.matches(&DataProfile::parse(p).unwrap(), topic) {
                            want.push(i as u8);
                        }
                    }
                }
                prop_assert_eq!(payloads(sub), want);
            }
            Ok(())
        })?;
    }
}
