//! `GET /api/v1/subscribe`: live records on topic filters as Server-Sent Events, bounded,
//! never holding a publisher back, unsubscribed when the reader goes away; and components'
//! fields in the live feed.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Admin, WAIT};
use fogline_admin::FeedFields;
use fogline_broker::StorageMode;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn open(a: &Admin, query: &str) -> TcpStream {
    let mut sock = TcpStream::connect(&a.addr).await.unwrap();
    let req = format!("GET /api/v1/subscribe?{query} HTTP/1.1\r\nHost: x\r\n\r\n");
    sock.write_all(req.as_bytes()).await.unwrap();
    sock
}

/// Reads until `n` message events have come; their data, parsed.
async fn messages(sock: &mut TcpStream, n: usize) -> (String, Vec<Value>) {
    let mut seen = String::new();
    let mut buf = vec![0u8; 64 * 1024];
    while seen.matches("event: message").count() < n {
        let got = tokio::time::timeout(WAIT, sock.read(&mut buf))
            .await
            .expect("records come")
            .unwrap();
        assert!(got > 0, "the feed ended: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..got]));
    }
    let data = seen
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    (seen, data)
}

async fn until(what: &str, f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn records_on_the_filters_arrive_and_the_subscriptions_end_with_the_reader() {
    let a = Admin::start(StorageMode::Memory, vec![]).await;
    let mut sock = open(&a, "filter=alerts/%23&filter=big/x").await;
    until("two subscriptions", || a.broker.subscription_count() == 2).await;
    let link = a.broker.link("rule");
    link.publish("nope/x", b"no").await.unwrap();
    link.publish("alerts/r1", br#"{"id":1}"#).await.unwrap();
    link.publish("big/x", vec![b'a'; 3000]).await.unwrap();
    let (head, data) = messages(&mut sock, 2).await;
    assert!(head.contains("text/event-stream"), "{head}");
    assert_eq!(data[0]["filter"], "alerts/#");
    assert_eq!(data[0]["topic"], "alerts/r1");
    assert_eq!(data[0]["payload"], r#"{"id":1}"#);
    assert_eq!(data[0]["dropped"], 0);
    assert!(data[0]["time_us"].as_u64().unwrap() > 0);
    assert_eq!(data[1]["topic"], "big/x");
    assert_eq!(data[1]["size"], 3000);
    assert_eq!(data[1]["payload"].as_str().unwrap().len(), 1024);
    // The browser goes away: its subscriptions with it.
    drop(sock);
    until("unsubscribed", || a.broker.subscription_count() == 0).await;
    a.stop().await;
}

#[tokio::test]
async fn a_reader_that_does_not_read_holds_no_publisher_back() {
    let a = Admin::start(StorageMode::Memory, vec![]).await;
    let mut sock = open(&a, "filter=hot").await;
    until("subscribed", || a.broker.subscription_count() == 1).await;
    // Far more than the socket buffers and the ring hold, published while nobody reads.
    let link = a.broker.link("hot");
    let publish = async {
        for _ in 0..20_000 {
            link.publish("hot", vec![b'x'; 1024]).await.unwrap();
        }
    };
    tokio::time::timeout(WAIT, publish)
        .await
        .expect("publishing is not held back");
    // Reading now, the reader is told what it missed.
    let mut seen = String::new();
    let mut buf = vec![0u8; 64 * 1024];
    let dropped = loop {
        let n = tokio::time::timeout(WAIT, sock.read(&mut buf))
            .await
            .expect("records come")
            .unwrap();
        assert!(n > 0);
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        let last = seen
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|v| v["dropped"].as_u64())
            .max()
            .unwrap_or(0);
        if last > 0 {
            break last;
        }
    };
    assert!(dropped < 20_000, "{dropped}");
    a.stop().await;
}

#[tokio::test]
async fn bad_requests_are_refused() {
    let a = Admin::start(StorageMode::Memory, vec![]).await;
    let many: Vec<String> = (0..17).map(|i| format!("filter=t{i}")).collect();
    for query in [
        String::new(),
        "filter=a/%23/b".into(),
        "topic=a".into(),
        many.join("&"),
    ] {
        let r = a.get(&format!("/api/v1/subscribe?{query}")).await;
        assert_eq!(r.status, 400, "{query}: {}", r.body);
        assert!(r.json()["error"]["message"].is_string());
    }
    assert_eq!(a.broker.subscription_count(), 0);
    a.stop().await;
}

struct Rules;

impl FeedFields for Rules {
    fn add(&self, into: &mut serde_json::Map<String, Value>) {
        into.insert("rules".into(), serde_json::json!([{"id": "r1"}]));
    }
}

#[tokio::test]
async fn components_add_fields_to_the_live_feed() {
    let a = Admin::start_with(StorageMode::Memory, vec![], vec![Arc::new(Rules)]).await;
    let mut sock = TcpStream::connect(&a.addr).await.unwrap();
    sock.write_all(b"GET /api/v1/events HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains("\n\n") || !seen.contains("data: ") {
        let n = tokio::time::timeout(WAIT, sock.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0);
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let data = seen.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
    let snap: Value = serde_json::from_str(data).unwrap();
    assert_eq!(snap["rules"][0]["id"], "r1");
    assert!(snap["totals"].is_object());
    a.stop().await;
}
