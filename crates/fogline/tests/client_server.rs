//! fogline-client against the real server, in one process: what a fake server cannot show
//! (fetch answers that come after the caller gave up, a dropped full subscription).

use std::time::Duration;

use fogline_client::{
    Client, ClientOptions, ConsumerOptions, PublishRecord, StartPosition, SubscribeOptions,
};
use fogline_node::{Config, Node};
use tokio::sync::oneshot;

struct Running {
    addr: String,
    broker: fogline_broker::Broker,
    stop: Option<oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

async fn serve() -> Running {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::default();
    cfg.native.listen = vec!["127.0.0.1:0".into()];
    cfg.mqtt.listen = vec![];
    cfg.admin.listen = vec![];
    cfg.broker.data_dir = dir.path().to_path_buf();
    cfg.broker.storage = fogline_broker::StorageMode::Mmap;
    let node = Node::start(cfg).await.unwrap();
    let addr = node.address("native").unwrap();
    let broker = node.broker().clone();
    let (tx, rx) = oneshot::channel();
    tokio::spawn(node.run(async {
        let _ = rx.await;
    }));
    Running {
        addr,
        broker,
        stop: Some(tx),
        _dir: dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_answering_a_cancelled_fetch_go_to_the_next_one() {
    let srv = serve().await;
    let client = Client::connect(&srv.addr, ClientOptions::default())
        .await
        .unwrap();
    let opts = ConsumerOptions {
        start: StartPosition::Earliest,
        ack_timeout: None,
        ..ConsumerOptions::default()
    };
    let mut consumer = client.consumer("default", opts).await.unwrap();
    // The caller gives up on a fetch the server still holds open...
    let gave_up = tokio::time::timeout(
        Duration::from_millis(100),
        consumer.fetch(10, Duration::from_secs(30)),
    )
    .await;
    assert!(gave_up.is_err());
    // ...and the server answers it with these once they are stored. Without acks they are
    // handed out once: they were dropped when no fetch waited for them.
    for i in 0..3u8 {
        let rec = PublishRecord::new(format!("t/{i}"), vec![i]);
        client.publish_acked(&rec).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut got = Vec::new();
    for _ in 0..3 {
        let batch = consumer
            .fetch(10, Duration::from_millis(300))
            .await
            .unwrap();
        got.extend(batch.iter().map(|r| r.offset));
    }
    // The cancelled fetch's answer (record 0, stored first) comes first; nothing is lost.
    assert_eq!(got, [0, 1, 2]);
    assert_eq!(consumer.next_offset(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_full_subscription_lets_the_client_read_again() {
    let srv = serve().await;
    let client = Client::connect(&srv.addr, ClientOptions::default())
        .await
        .unwrap();
    let opts = SubscribeOptions {
        capacity: 10,
        ..SubscribeOptions::default()
    };
    let sub = client.subscribe("full/#", opts).await.unwrap();
    for i in 0..100u32 {
        client.publish("full/x", i.to_le_bytes()).await.unwrap();
    }
    client.flush().await.unwrap();
    // The reader holds the socket for the full subscription; dropping it must free it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(sub);
    let rec = PublishRecord::new("other", &b"after"[..]);
    let acked = tokio::time::timeout(Duration::from_secs(5), client.publish_acked(&rec)).await;
    assert!(matches!(acked, Ok(Ok(()))), "{acked:?}");
}

/// Polls `f` once.
async fn poll_once<F: std::future::Future>(f: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    let mut f = Some(f);
    std::future::poll_fn(|cx| std::task::Poll::Ready(f.take().unwrap().poll(cx))).await
}

/// A `consumer` or `subscribe` future dropped before its answer (a timeout or a select
/// around it) leaves nothing behind: the durable name is free again and the server holds no
/// subscription. Before, the entry stayed in the client, was opened when the answer came, and
/// was re-opened after every reconnect: the name stayed taken (`Duplicate`).
///
/// One thread: on two, a preempted test thread let the whole round trip finish inside the
/// single poll, so the future was not pending when dropped (seen once in CI).
#[tokio::test(flavor = "current_thread")]
async fn an_abandoned_open_or_subscribe_leaves_nothing_behind() {
    let srv = serve().await;
    let client = Client::connect(&srv.addr, ClientOptions::default())
        .await
        .unwrap();
    let durable = || ConsumerOptions {
        name: "dash".into(),
        ..ConsumerOptions::default()
    };
    // Each is polled once (it sends its request) and dropped.
    let mut open = Box::pin(client.consumer("default", durable()));
    assert!(poll_once(open.as_mut()).await.is_pending());
    drop(open);
    let before = srv.broker.subscription_count();
    let mut sub = Box::pin(client.subscribe("gone/#", SubscribeOptions::default()));
    assert!(poll_once(sub.as_mut()).await.is_pending());
    drop(sub);
    // Two round trips: the answers have come, and what the client sent back is applied.
    client.ping().await.unwrap();
    client.ping().await.unwrap();
    let consumer = client.consumer("default", durable()).await;
    assert!(consumer.is_ok(), "{:?}", consumer.err());
    assert_eq!(srv.broker.subscription_count(), before);
}
