//! What one client can cost: bytes per poll, waits at the in-flight limit, names, empty
//! batches, a publisher blocked by many full queues, the route cache.

use std::sync::Arc;
use std::time::Duration;

use fogline_broker::{
    Batch, Broker, BrokerConfig, BrokerError, ConsumerOptions, Handoff, QueueConfig,
    SlowConsumerPolicy, Start, StorageMode, SubscribeOptions,
};
use fogline_wire::RecordBlock;
use tokio::sync::Notify;
use tokio::time::Instant;

fn broker() -> Broker {
    let config = BrokerConfig {
        storage: StorageMode::Memory,
        ..BrokerConfig::default()
    };
    Broker::open(config).unwrap().0
}

fn batch(broker: &Broker, topic: &str, payloads: &[Vec<u8>]) -> Batch {
    Batch {
        topic: topic.into(),
        records: RecordBlock::from_records(payloads.iter().map(|p| (0u64, &b""[..], &p[..])))
            .unwrap(),
        timestamp: 1,
        priority: false,
        origin: broker.next_origin(),
    }
}

fn opts(
    filter: Option<&str>,
    ack_timeout: Option<Duration>,
    max_inflight: usize,
) -> ConsumerOptions {
    ConsumerOptions {
        name: None,
        filter: filter.map(String::from),
        start: Start::Earliest,
        ack_timeout,
        max_inflight,
    }
}

#[tokio::test]
async fn a_poll_reads_about_four_mib_at_most() {
    let b = broker();
    for _ in 0..10 {
        b.publish(batch(&b, "t", &[vec![1u8; 1 << 20]]), Handoff::Queue)
            .await
            .unwrap();
    }
    let mut c = b.open_consumer("default", opts(None, None, 1024)).unwrap();
    let got = c.poll(1024, Instant::now()).unwrap();
    assert!(
        (1..=5).contains(&got.len()),
        "{} records of 1 MiB",
        got.len()
    );
    let mut total = got.len();
    while c.has_new() {
        total += c.poll(1024, Instant::now()).unwrap().len();
    }
    assert_eq!(total, 10);
}

#[tokio::test]
async fn a_filter_that_matches_little_scans_in_steps() {
    let b = broker();
    let noise: Vec<Vec<u8>> = (0..64).map(|_| vec![0u8; 16 << 10]).collect();
    for _ in 0..10 {
        b.publish(batch(&b, "noise", &noise), Handoff::Queue)
            .await
            .unwrap();
    }
    b.publish(batch(&b, "wanted", &[b"w".to_vec()]), Handoff::Queue)
        .await
        .unwrap();
    let mut c = b
        .open_consumer("default", opts(Some("wanted"), None, 1024))
        .unwrap();
    // 10 MiB of records the filter rejects: the first poll stops after about 4 MiB of
    // them, empty, and later polls go on from there.
    let first = c.poll(10, Instant::now()).unwrap();
    assert!(first.is_empty());
    assert!(c.cursor() > 0 && c.cursor() < 640, "cursor {}", c.cursor());
    let mut polls = 1;
    let found = loop {
        let got = c.poll(10, Instant::now()).unwrap();
        polls += 1;
        if !got.is_empty() {
            break got;
        }
        assert!(polls < 10);
    };
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].record.offset, 640);
    assert!(polls >= 3, "{polls} polls for 10 MiB");
}

#[tokio::test(start_paused = true)]
async fn a_consumer_at_its_inflight_limit_waits_for_the_expiry() {
    let b = broker();
    let ps: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i]).collect();
    b.publish(batch(&b, "t", &ps), Handoff::Queue)
        .await
        .unwrap();
    let mut c = b
        .open_consumer("default", opts(None, Some(Duration::from_secs(5)), 2))
        .unwrap();
    assert_eq!(c.poll(10, Instant::now()).unwrap().len(), 2);
    assert!(!c.has_room() && c.has_new());
    // New records do not end the wait (a poll could not hand them out): the expiry does.
    let started = Instant::now();
    c.wait(started + Duration::from_secs(60)).await;
    assert_eq!(started.elapsed(), Duration::from_secs(5));
    let again = c.poll(10, Instant::now()).unwrap();
    assert_eq!(
        again
            .iter()
            .map(|d| (d.record.offset, d.delivery_count))
            .collect::<Vec<_>>(),
        vec![(0, 2), (1, 2)]
    );
    c.ack(&[0]);
    assert!(c.has_room());
    let started = Instant::now();
    c.wait(started + Duration::from_secs(60)).await;
    assert_eq!(
        started.elapsed(),
        Duration::ZERO,
        "records wait and there is room"
    );
}

#[test]
fn durable_names_must_be_plain_file_names() {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig {
        storage: StorageMode::Mmap,
        data_dir: dir.path().join("data"),
        ..BrokerConfig::default()
    };
    let b = Broker::open(config).unwrap().0;
    let escape = dir.path().join("escaped");
    for bad in [
        escape.display().to_string(),
        "../../escaped".into(),
        "..".into(),
        ".x".into(),
        "a b".into(),
        "a/b".into(),
        "x".repeat(65),
    ] {
        let mut o = opts(None, None, 1);
        o.name = Some(bad.clone());
        match b.open_consumer("default", o) {
            Err(BrokerError::InvalidName(n)) => assert_eq!(n, bad),
            Err(e) => panic!("{bad:?}: {e}"),
            Ok(_) => panic!("{bad:?} was accepted"),
        }
    }
    assert!(!escape.exists());
    let mut o = opts(None, None, 1);
    o.name = Some("dash_1.v2-x".into());
    drop(b.open_consumer("default", o).unwrap());
    b.sync_positions();
    assert!(dir
        .path()
        .join("data/default/consumers/dash_1.v2-x")
        .exists());
}

#[tokio::test]
async fn a_batch_of_no_records_is_refused() {
    let b = broker();
    let empty = batch(&b, "t", &[]);
    assert!(matches!(
        b.check_sizes(&empty),
        Err(BrokerError::EmptyBatch)
    ));
    assert!(matches!(
        b.publish_unacked(batch(&b, "t", &[]), Handoff::Queue).await,
        Err(BrokerError::EmptyBatch)
    ));
    assert!(matches!(
        b.store_acked(batch(&b, "t", &[])),
        Err(BrokerError::EmptyBatch)
    ));
    assert_eq!(b.stream("default").unwrap().bounds(), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn a_batch_waits_one_block_timeout_in_all_however_many_queues_are_full() {
    let config = BrokerConfig {
        storage: StorageMode::Memory,
        subscriptions: QueueConfig {
            max_records: 1,
            policy: SlowConsumerPolicy::Block,
            block_timeout: Duration::from_secs(10),
            ..QueueConfig::default()
        },
        ..BrokerConfig::default()
    };
    let b = Broker::open(config).unwrap().0;
    // One client's five stuck subscriptions, each queue already full.
    let subs: Vec<_> = (0..5)
        .map(|_| {
            b.subscribe("#", 1, SubscribeOptions::default(), Arc::new(Notify::new()))
                .unwrap()
        })
        .collect();
    b.publish(batch(&b, "t", &[b"1".to_vec()]), Handoff::Queue)
        .await
        .unwrap();
    let started = tokio::time::Instant::now();
    b.publish(batch(&b, "t", &[b"2".to_vec()]), Handoff::Queue)
        .await
        .unwrap();
    // 10 s, not 50 s: every queue still full at the deadline is cut off.
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    assert!(subs.iter().all(|s| s.queue().closed().is_some()));
    assert_eq!(
        b.stats()
            .slow_consumers
            .load(std::sync::atomic::Ordering::Relaxed),
        5
    );
}

/// Issue 31, finding 6: stuck subscribers met one after another used to hold a publisher
/// one block timeout each (30 s for three). A subscriber that has taken nothing for a
/// block timeout while records waited is known to be stuck: nobody waits for it again.
#[tokio::test(start_paused = true)]
async fn stuck_subscribers_met_one_after_another_cost_one_block_timeout() {
    let config = BrokerConfig {
        storage: StorageMode::Memory,
        subscriptions: QueueConfig {
            max_records: 1,
            policy: SlowConsumerPolicy::Block,
            block_timeout: Duration::from_secs(10),
            ..QueueConfig::default()
        },
        ..BrokerConfig::default()
    };
    let b = Broker::open(config).unwrap().0;
    // Three clients that stopped reading, each on a topic of its own, each queue full.
    let subs: Vec<_> = ["a", "b", "c"]
        .iter()
        .map(|t| {
            b.subscribe(t, 1, SubscribeOptions::default(), Arc::new(Notify::new()))
                .unwrap()
        })
        .collect();
    for t in ["a", "b", "c"] {
        b.publish(batch(&b, t, &[b"1".to_vec()]), Handoff::Queue)
            .await
            .unwrap();
    }
    let started = Instant::now();
    for t in ["a", "b", "c"] {
        b.publish(batch(&b, t, &[b"2".to_vec()]), Handoff::Queue)
            .await
            .unwrap();
    }
    assert_eq!(started.elapsed(), Duration::from_secs(10), "not 30 s");
    assert!(subs.iter().all(|s| s.queue().closed().is_some()));

    // A subscriber that keeps taking records is not stuck, however full its queue.
    let slow = b
        .subscribe("d", 1, SubscribeOptions::default(), Arc::new(Notify::new()))
        .unwrap();
    b.publish(batch(&b, "d", &[b"1".to_vec()]), Handoff::Queue)
        .await
        .unwrap();
    let reader = {
        let slow = slow.clone();
        tokio::spawn(async move {
            for _ in 0..3 {
                tokio::time::sleep(Duration::from_secs(8)).await;
                slow.queue().drain(&mut Vec::new(), usize::MAX);
            }
        })
    };
    let started = Instant::now();
    for _ in 0..3 {
        b.publish(batch(&b, "d", &[b"2".to_vec()]), Handoff::Queue)
            .await
            .unwrap();
    }
    reader.await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(24));
    assert!(
        slow.queue().closed().is_none(),
        "a slow subscriber is not cut off"
    );
}

/// A second publisher meeting a stall another one waits on waits only for what is left
/// of it.
#[tokio::test(start_paused = true)]
async fn publishers_share_one_stall() {
    let config = BrokerConfig {
        storage: StorageMode::Memory,
        subscriptions: QueueConfig {
            max_records: 1,
            policy: SlowConsumerPolicy::Block,
            block_timeout: Duration::from_secs(10),
            ..QueueConfig::default()
        },
        ..BrokerConfig::default()
    };
    let b = Broker::open(config).unwrap().0;
    let sub = b
        .subscribe("t", 1, SubscribeOptions::default(), Arc::new(Notify::new()))
        .unwrap();
    b.publish(batch(&b, "t", &[b"1".to_vec()]), Handoff::Queue)
        .await
        .unwrap();
    let t0 = Instant::now();
    let first = {
        let b = b.clone();
        tokio::spawn(async move {
            b.publish(batch(&b, "t", &[b"2".to_vec()]), Handoff::Queue)
                .await
                .unwrap();
            t0.elapsed()
        })
    };
    tokio::time::sleep(Duration::from_secs(6)).await;
    b.publish(batch(&b, "t", &[b"3".to_vec()]), Handoff::Queue)
        .await
        .unwrap();
    assert_eq!(t0.elapsed(), Duration::from_secs(10), "4 s more, not 10");
    assert_eq!(first.await.unwrap(), Duration::from_secs(10));
    assert!(sub.queue().closed().is_some());
}

#[tokio::test]
async fn long_topics_are_routed_without_the_cache() {
    let b = broker();
    let sub = b
        .subscribe("#", 1, SubscribeOptions::default(), Arc::new(Notify::new()))
        .unwrap();
    let long = "x".repeat(300);
    b.publish(batch(&b, &long, &[b"l".to_vec()]), Handoff::Queue)
        .await
        .unwrap();
    assert_eq!(b.cached_routes(), 0);
    b.publish(batch(&b, "short", &[b"s".to_vec()]), Handoff::Queue)
        .await
        .unwrap();
    assert_eq!(b.cached_routes(), 1);
    assert_eq!(sub.queue().len(), 2, "both were delivered");
}

/// A cached route does not outlive the subscriptions it names (issue 31, item 2): left in
/// the cache until its topic came again, a client's own topic kept the ended subscription
/// alive, and with it its queue and its MQTT session's allocation, for every client that
/// ever left.
#[tokio::test]
async fn the_route_cache_lets_ended_subscriptions_go() {
    let b = broker();
    let subs: Vec<_> = (0..100)
        .map(|i| {
            let filter = format!("client/{i}");
            b.subscribe(
                &filter,
                1,
                SubscribeOptions::default(),
                Arc::new(Notify::new()),
            )
            .unwrap()
        })
        .collect();
    for i in 0..100 {
        let topic = format!("client/{i}");
        b.publish(batch(&b, &topic, &[b"x".to_vec()]), Handoff::Queue)
            .await
            .unwrap();
    }
    assert_eq!(b.cached_routes(), 100);
    assert!(subs.iter().all(|s| s.queue().len() == 1));
    for s in &subs {
        b.unsubscribe(s);
    }
    assert_eq!(b.cached_routes(), 0, "no route names an ended subscription");
    for s in &subs {
        assert_eq!(Arc::strong_count(s), 1, "only its holder keeps it");
    }
    // Routes are cached again for the topics published next.
    b.publish(batch(&b, "client/0", &[b"y".to_vec()]), Handoff::Queue)
        .await
        .unwrap();
    assert_eq!(b.cached_routes(), 1);
}
