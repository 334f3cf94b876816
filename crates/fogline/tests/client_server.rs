//! fogline-client against the real server, in one process: what a fake server cannot show
//! (fetch answers that come after the caller gave up, a dropped full subscription).

use std::time::Duration;

use fogline_client::{
    Client, ClientOptions, ConsumerOptions, PublishRecord, StartPosition, SubscribeOptions,
};
use fogline_server::{Config, Server};
use tokio::sync::oneshot;

struct Running {
    addr: String,
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
    cfg.server.listen = vec!["127.0.0.1:0".into()];
    cfg.mqtt.listen = vec![];
    cfg.broker.data_dir = dir.path().to_path_buf();
    cfg.broker.storage = fogline_broker::StorageMode::Memory;
    let server = Server::bind(cfg).await.unwrap();
    let addr = server.local_addrs()[0].clone();
    let (tx, rx) = oneshot::channel();
    tokio::spawn(server.run(async {
        let _ = rx.await;
    }));
    Running {
        addr,
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
