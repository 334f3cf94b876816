//! A stream whose retention a bridge holds: its hold in the stream view, `/metrics` and
//! `/healthz` while it refuses records.

mod common;

use common::Admin;
use fogline_broker::{BrokerError, StorageMode};

#[tokio::test]
async fn a_held_stream_shows_its_hold_and_its_refusals() {
    let a = Admin::start(StorageMode::Memory, vec![]).await;
    let body = r#"{"name":"held","subjects":["h/#"],"retention_bytes":8192,"segment_bytes":4096}"#;
    assert_eq!(
        a.send("POST", "/api/v1/streams", Some(body)).await.status,
        201
    );
    let s = a.get("/api/v1/streams/held").await.json();
    assert!(s["retention_hold"].is_null(), "{s}");

    let hold = a
        .broker
        .stream("held")
        .unwrap()
        .hold_retention("kafka-core");
    let link = a.broker.link("t");
    let mut refused = None;
    for _ in 0..200 {
        if let Err(e) = link.publish_acked("h/1", [1u8; 1000]).await {
            refused = Some(e);
            break;
        }
    }
    assert!(
        matches!(refused, Some(BrokerError::Held { .. })),
        "{refused:?}"
    );

    let h = &a.get("/api/v1/streams/held").await.json()["retention_hold"];
    assert_eq!(h["holders"][0]["name"], "kafka-core");
    assert_eq!(h["holders"][0]["offset"], 0);
    assert_eq!(
        (h["full"].as_bool(), h["max_bytes"].as_u64()),
        (Some(true), Some(8192))
    );
    assert!(h["held_bytes"].as_u64().unwrap() > 8192, "{h}");
    assert_eq!(h["refused_records"], 1);
    let metrics = a.get("/metrics").await.body;
    for line in [
        "fogline_stream_hold_full{stream=\"held\"} 1.0",
        "fogline_stream_hold_refused_records_total{stream=\"held\"} 1.0",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "{line} not in\n{metrics}"
        );
    }
    let health = a.get("/healthz").await.json();
    assert_eq!(health["status"], "degraded", "{health}");
    assert!(
        health["warnings"][0].as_str().unwrap().contains("held"),
        "{health}"
    );

    drop(hold);
    let h = &a.get("/api/v1/streams/held").await.json()["retention_hold"];
    assert_eq!(
        (h["full"].as_bool(), h["held_bytes"].as_u64()),
        (Some(false), Some(0))
    );
    assert!(a
        .get("/metrics")
        .await
        .body
        .contains("fogline_stream_hold_full{stream=\"held\"} 0.0"));
    link.publish_acked("h/1", b"again").await.unwrap();
    a.stop().await;
}
