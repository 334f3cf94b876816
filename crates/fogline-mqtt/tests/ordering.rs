//! Delivery order across connections: a node's live subscribers are sent a
//! QoS 1 message before its publisher is sent the PUBACK, as a broker that
//! writes to subscribers inside its publish handler would (Mosquitto does).
//! The server runs on its own one-thread runtime, as `fogline serve` does on
//! one core, so the test's client sees the server's write order. (Without the
//! connection's yield after a PUBLISH this failed at the first message, 3 runs
//! of 3.)

mod common;

use common::*;
use fogline_mqtt::codec::Version;
use tokio::sync::oneshot;

#[test]
fn qos1_subscribers_are_sent_the_message_before_the_puback() {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let s = TestServer::start(|_| {}).await;
            addr_tx.send(s.mqtt.clone()).expect("address sent");
            let _ = stop_rx.await;
            s.stop().await;
        });
    });
    let addr = addr_rx.recv().expect("server address");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (mut sub, _) = Raw::connect(&addr, connect_packet(Version::V5, "ord-s", true)).await;
        sub.subscribe(1, vec![filter("ord/t", QoS::AtMostOnce)])
            .await;
        let (mut p, _) = Raw::connect(&addr, connect_packet(Version::V5, "ord-p", true)).await;
        for pkid in 1..=100 {
            p.publish_qos1(publish("ord/t", b"x", QoS::AtLeastOnce, pkid))
                .await;
            assert!(
                sub.queued_bytes() > 0,
                "PUBACK {pkid} arrived before the subscriber was sent the message"
            );
            let got = sub.expect_publish().await;
            assert_eq!(&got.payload[..], b"x");
        }
    });
    let _ = stop_tx.send(());
    server.join().expect("server thread");
}
