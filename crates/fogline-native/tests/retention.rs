//! Retention by size and by age.

mod common;

use std::time::Duration;

use common::{Raw, TestServer};
use fogline_wire::StartPosition;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn size_retention_drops_the_oldest_segments() {
    let srv = TestServer::start(|c| {
        c.broker.segment_bytes = bytesize::ByteSize::kib(16);
        c.broker.retention_bytes = Some(bytesize::ByteSize::kib(64));
    })
    .await;
    let mut c = Raw::connect(&srv.addr).await;
    let payload = vec![1u8; 200];
    for i in 0..100 {
        c.publish_acked(
            "t",
            &[&payload, &payload, &payload, &payload, &payload],
            i + 1,
        )
        .await;
    }
    srv.broker.enforce_retention();
    let stream = srv.broker.stream("default").expect("default");
    let (first, next) = stream.bounds();
    assert_eq!(next, 500);
    assert!(first > 0, "old segments were dropped");
    assert!(
        stream.stats().bytes <= 80 * 1024,
        "kept about the limit: {}",
        stream.stats().bytes
    );
    let (id, start) = c
        .consumer("default", "", StartPosition::Earliest, 0, 0)
        .await;
    assert_eq!(start, first, "earliest is the oldest retained record");
    assert_eq!(c.fetch(id, 1, 0).await[0].0, first);
    srv.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn age_retention_drops_segments_older_than_the_limit() {
    let srv = TestServer::start(|c| {
        c.broker.segment_bytes = bytesize::ByteSize::kib(16);
        c.broker.retention_bytes = None;
        c.broker.retention_age = Some(Duration::from_millis(400));
    })
    .await;
    let mut c = Raw::connect(&srv.addr).await;
    let payload = vec![1u8; 1000];
    for i in 0..40 {
        c.publish_acked("t", &[&payload], i + 1).await;
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    for i in 0..40 {
        c.publish_acked("t", &[&payload], i + 100).await;
    }
    srv.broker.enforce_retention();
    let (first, next) = srv.broker.stream("default").expect("default").bounds();
    assert_eq!(next, 80);
    assert!(first > 0, "segments holding only old records are gone");
    assert!(first <= 40, "no new record was dropped (first = {first})");
    srv.stop().await;
}
