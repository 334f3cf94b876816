//! The in-process link on its own: publish (acked or not), live subscriptions with their
//! queue bounds, slow-consumer policies and priority, and consumers with fetch, ack,
//! redelivery and a durable position; the same semantics a remote client gets.

use std::time::Duration;

use fogline_broker::link::PublishOptions;
use fogline_broker::queue::CloseReason;
use fogline_broker::{
    Broker, BrokerConfig, ConsumerOptions, DropReason, Protocol, SlowConsumerPolicy, Start,
    StorageMode, SubscribeOptions,
};
use fogline_wire::{Headers, RecordBlock};

const WAIT: Duration = Duration::from_secs(10);

fn broker(
    dir: &std::path::Path,
    storage: StorageMode,
    tune: impl FnOnce(&mut BrokerConfig),
) -> Broker {
    let mut config = BrokerConfig {
        storage,
        data_dir: dir.to_path_buf(),
        ..BrokerConfig::default()
    };
    tune(&mut config);
    Broker::open(config).unwrap().0
}

fn policy(p: SlowConsumerPolicy) -> SubscribeOptions {
    SubscribeOptions {
        policy: Some(p),
        ..SubscribeOptions::default()
    }
}

#[tokio::test]
async fn published_records_reach_subscribers_and_streams() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Memory, |_| {});
    let rules = b.link("rules");
    let mut sub = rules
        .subscribe("site/+/temp", SubscribeOptions::default())
        .unwrap();
    let producer = b.link("sensors");
    producer.publish("site/r1/temp", b"21.5").await.unwrap();
    producer
        .publish_with(
            "site/r2/temp",
            &[("unit", b"C"), ("type", b"probe")],
            b"19.0",
            PublishOptions::default(),
        )
        .await
        .unwrap();
    producer.publish("site/r1/humidity", b"40").await.unwrap();
    let m = tokio::time::timeout(WAIT, sub.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (m.topic.as_str(), &m.payload[..]),
        ("site/r1/temp", &b"21.5"[..])
    );
    assert!(m.timestamp > 0, "the broker's receive time stands in");
    let m = tokio::time::timeout(WAIT, sub.recv())
        .await
        .unwrap()
        .unwrap();
    let h = Headers::parse(m.headers).unwrap();
    assert_eq!(h.get("unit").as_deref(), Some(&b"C"[..]));
    assert_eq!(b.stream("default").unwrap().stats().records, 3);
    // Both links are connections of the node, with what they moved.
    let clients = b.clients().list();
    let names: Vec<_> = clients.iter().map(|c| c.name.clone().unwrap()).collect();
    assert_eq!(names, ["rules", "sensors"]);
    assert!(clients.iter().all(|c| c.protocol == Protocol::Link));
    assert_eq!(clients[1].traffic.records_in, 3);
    assert_eq!(clients[0].traffic.records_out, 2);
    // Dropping the subscription unsubscribes.
    drop(sub);
    assert_eq!(b.subscription_count(), 0);
    drop(rules);
    assert_eq!(b.clients().list().len(), 1);
}

#[tokio::test]
async fn an_acked_publish_is_durable_when_it_returns() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Fsync, |_| {});
    let link = b.link("bridge");
    for i in 0..20u32 {
        link.publish_acked("t", i.to_le_bytes()).await.unwrap();
        let (_, end) = b.stream("default").unwrap().bounds();
        assert_eq!(
            end,
            u64::from(i) + 1,
            "visible and synced once acknowledged"
        );
    }
    let err = link.publish_acked("bad/+/topic", b"x").await.unwrap_err();
    assert!(err.to_string().contains("invalid topic"), "{err}");
    let big = vec![0u8; (16 << 20) + 1];
    assert!(
        link.publish_acked("t", &big).await.is_err(),
        "over max_message_bytes"
    );
    drop(link);
    drop(b);
    let b = broker(dir.path(), StorageMode::Fsync, |_| {});
    assert_eq!(b.stream("default").unwrap().stats().records, 20);
}

#[tokio::test]
async fn high_priority_overtakes_what_is_queued() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Memory, |_| {});
    let link = b.link("robot");
    let mut sub = link
        .subscribe("bus/#", SubscribeOptions::default())
        .unwrap();
    for i in 0..100u32 {
        link.publish("bus/bulk", i.to_le_bytes()).await.unwrap();
    }
    let urgent = PublishOptions {
        priority: true,
        ..PublishOptions::default()
    };
    link.publish_with("bus/stop", &[], b"STOP", urgent)
        .await
        .unwrap();
    let first = tokio::time::timeout(WAIT, sub.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.topic.as_str(), "bus/stop");
    assert!(first.priority);
    let second = sub.recv().await.unwrap();
    assert_eq!(
        &second.payload[..],
        &0u32.to_le_bytes(),
        "then bulk, in order"
    );
}

#[tokio::test]
async fn a_full_queue_applies_the_subscriptions_policy() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Memory, |c| {
        c.subscriptions.max_records = 4;
        c.subscriptions.block_timeout = Duration::from_millis(200);
    });
    let link = b.link("p");
    let mut dropping = link
        .subscribe("t", policy(SlowConsumerPolicy::DropOldest))
        .unwrap();
    let mut cut = link
        .subscribe("t", policy(SlowConsumerPolicy::Disconnect))
        .unwrap();
    for i in 0..10u32 {
        link.publish("t", i.to_le_bytes()).await.unwrap();
    }
    // drop-oldest keeps the newest four and says how many it dropped.
    let mut got = Vec::new();
    while got.len() < 4 {
        let m = tokio::time::timeout(WAIT, dropping.recv())
            .await
            .unwrap()
            .unwrap();
        got.push(u32::from_le_bytes(m.payload[..].try_into().unwrap()));
    }
    assert_eq!(got, [6, 7, 8, 9]);
    assert_eq!(dropping.dropped(), 6);
    // disconnect cuts the subscription off: it ends, and says why.
    assert_eq!(cut.closed(), Some(CloseReason::SlowConsumer));
    assert!(tokio::time::timeout(WAIT, cut.recv())
        .await
        .unwrap()
        .is_none());
    // block holds the publisher back for block_timeout, then cuts the subscriber off.
    let mut blocked = link
        .subscribe("u", policy(SlowConsumerPolicy::Block))
        .unwrap();
    for i in 0..4u32 {
        link.publish("u", i.to_le_bytes()).await.unwrap();
    }
    let started = std::time::Instant::now();
    link.publish("u", b"one too many").await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "the publisher waited"
    );
    assert_eq!(blocked.closed(), Some(CloseReason::SlowConsumer));
    assert!(blocked.recv().await.is_none());
    assert_eq!(
        b.stats()
            .slow_consumers
            .load(std::sync::atomic::Ordering::Relaxed),
        2
    );
    // What was lost is counted by reason: 6 dropped, 4 + 4 discarded with the cut-offs.
    assert_eq!(b.stats().dropped(DropReason::QueueFull), 6);
    assert_eq!(b.stats().dropped(DropReason::SlowConsumer), 8);
}

#[tokio::test]
async fn a_blocked_publisher_goes_on_when_the_subscriber_reads() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Memory, |c| {
        c.subscriptions.max_records = 2;
        c.subscriptions.block_timeout = Duration::from_secs(30);
    });
    let link = b.link("p");
    let mut sub = link
        .subscribe("t", policy(SlowConsumerPolicy::Block))
        .unwrap();
    let publisher = link.clone();
    let sender = tokio::spawn(async move {
        for i in 0..50u32 {
            publisher.publish("t", i.to_le_bytes()).await.unwrap();
        }
    });
    for i in 0..50u32 {
        let m = tokio::time::timeout(WAIT, sub.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            &m.payload[..],
            &i.to_le_bytes(),
            "nothing lost or reordered"
        );
    }
    tokio::time::timeout(WAIT, sender).await.unwrap().unwrap();
    assert_eq!(sub.dropped(), 0);
}

#[tokio::test]
async fn a_consumer_fetches_acks_and_gets_unacked_records_again() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Mmap, |_| {});
    let link = b.link("worker");
    let opts = ConsumerOptions {
        name: Some("w".into()),
        filter: Some("jobs/#".into()),
        start: Start::Resume,
        ack_timeout: Some(Duration::from_millis(200)),
        max_inflight: 100,
    };
    let mut c = link.consumer("default", opts.clone()).unwrap();
    // Nothing yet: a fetch waits, then returns empty.
    assert!(c
        .fetch(10, Duration::from_millis(50))
        .await
        .unwrap()
        .is_empty());
    // A fetch waiting for a record returns when one is published.
    let publisher = link.clone();
    let waiting = tokio::spawn(async move { c.fetch(10, WAIT).await.map(|d| (c, d)) });
    tokio::time::sleep(Duration::from_millis(50)).await;
    publisher.publish_acked("other", b"skip").await.unwrap();
    publisher.publish_acked("jobs/1", b"a").await.unwrap();
    publisher.publish_acked("jobs/2", b"b").await.unwrap();
    let (mut c, got) = waiting.await.unwrap().unwrap();
    assert!(!got.is_empty());
    let mut got = got;
    if got.len() < 2 {
        got.extend(c.fetch(10, WAIT).await.unwrap());
    }
    let offsets: Vec<u64> = got.iter().map(|d| d.record.offset).collect();
    assert_eq!(offsets, [1, 2], "the filter skips offset 0");
    c.ack(&[1]).unwrap();
    // Offset 2 was not acked: it comes again after the ack timeout, counted.
    let again = c.fetch(10, WAIT).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].record.offset, again[0].delivery_count), (2, 2));
    let info = b.consumer_info("default", "w").unwrap();
    assert_eq!(
        (info.ack_floor, info.pending_acks, info.redelivered),
        (2, 1, 1)
    );
    c.ack(&[2]).unwrap();
    drop(c);
    drop(link);
    drop(publisher);
    drop(b);
    // The durable position survives a restart.
    let b = broker(dir.path(), StorageMode::Mmap, |_| {});
    let link = b.link("worker");
    let mut c = link.consumer("default", opts).unwrap();
    assert_eq!(c.floor(), 3);
    link.publish_acked("jobs/3", b"c").await.unwrap();
    let got = c.fetch(10, WAIT).await.unwrap();
    assert_eq!(got[0].record.offset, 3);
    // A durable name is one consumer at a time, as for remote clients.
    let err = link
        .consumer(
            "default",
            ConsumerOptions {
                name: Some("w".into()),
                filter: None,
                start: Start::Resume,
                ack_timeout: None,
                max_inflight: 1,
            },
        )
        .err()
        .expect("refused");
    assert!(err.to_string().contains("already open"), "{err}");
}

#[tokio::test]
async fn a_block_of_records_is_published_as_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), StorageMode::Memory, |_| {});
    let link = b.link("batcher");
    let mut sub = link.subscribe("t", SubscribeOptions::default()).unwrap();
    let bytes: Vec<[u8; 1]> = (0..8u8).map(|i| [i]).collect();
    let block =
        RecordBlock::from_records(bytes[..5].iter().map(|p| (0, &b""[..], &p[..]))).unwrap();
    link.publish_block("t", block, PublishOptions::default())
        .await
        .unwrap();
    let batch = tokio::time::timeout(WAIT, sub.recv_batch())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(batch.count(), 5);
    // Records and batches mix: what recv has not handed out comes first.
    let block =
        RecordBlock::from_records(bytes[5..].iter().map(|p| (0, &b""[..], &p[..]))).unwrap();
    link.publish_block("t", block, PublishOptions::default())
        .await
        .unwrap();
    assert_eq!(&sub.recv().await.unwrap().payload[..], &[5]);
    let rest = sub.recv_batch().await.unwrap();
    let rest: Vec<u8> = rest.records.iter().map(|r| r.payload[0]).collect();
    assert_eq!(rest, [6, 7]);
}
