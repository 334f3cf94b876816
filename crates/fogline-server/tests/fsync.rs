//! `fsync` storage end to end: acknowledged publishes of several connections are durable and
//! replayable when acknowledged (their flushes are shared), live subscribers get them, and
//! fire-and-forget records become replayable too.

mod common;

use std::collections::HashSet;

use common::{collect, Raw, TestServer};
use fogline_broker::StorageMode;
use fogline_wire::StartPosition;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acked_publishes_of_many_connections_are_replayable_when_acked() {
    let srv = TestServer::start(|c| c.broker.storage = StorageMode::Fsync).await;
    let mut sub = Raw::connect(&srv.addr).await;
    sub.subscribe(1, "t/#", 0).await;
    let publishers: Vec<_> = (0..4u32)
        .map(|p| {
            let addr = srv.addr.clone();
            tokio::spawn(async move {
                let mut c = Raw::connect(&addr).await;
                for i in 0..25u32 {
                    let payload = format!("{p}-{i}");
                    c.publish_acked(&format!("t/{p}"), &[payload.as_bytes()], u64::from(i) + 1)
                        .await;
                }
            })
        })
        .collect();
    for p in publishers {
        p.await.unwrap();
    }
    let stream = srv.broker.stream("default").unwrap().clone();
    assert!(stream.flushes() >= 1, "acked publishes were flushed");
    // Everything acknowledged is already readable: a consumer opened now gets all of it.
    let mut c = Raw::connect(&srv.addr).await;
    let (id, _) = c
        .consumer("default", "all", StartPosition::Earliest, 0, 0)
        .await;
    let got = c.fetch(id, 200, 0).await;
    let names: HashSet<Vec<u8>> = got.iter().map(|(_, _, p)| p.to_vec()).collect();
    assert_eq!(names.len(), 100);
    let live = collect(&mut sub, 1, 100).await;
    assert_eq!(live.len(), 100);

    // Fire-and-forget records are flushed too, with nobody waiting.
    c.publish("t/ff", &[b"a", b"b"], 0, 0).await;
    let mut more = Vec::new();
    while more.len() < 2 {
        more.extend(c.fetch(id, 10, 1000).await);
    }
    assert_eq!(more.len(), 2);
    srv.stop().await;
}
