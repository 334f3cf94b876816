//! Interop with Eclipse Paho for Python (pip package paho-mqtt 2.x), MQTT
//! 3.1.1 and 5.0: every QoS, v5 properties, retained messages, persistent
//! sessions, wills, shared subscriptions and Associative Rendezvous (`fogline-interest`,
//! `$fogline/announce/`, `$fogline/notify/`; see paho/scenario.py).

mod common;

use std::process::Command;

use common::*;

async fn scenario(version: &str, websocket: bool) {
    let s = TestServer::start(|c| c.mqtt.ws_listen = vec!["127.0.0.1:0".into()]).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/paho/scenario.py");
    let (port, transport) = match websocket {
        true => (s.ws_port.expect("a WebSocket listener").to_string(), "ws"),
        false => (s.port.to_string(), "tcp"),
    };
    let version = version.to_string();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .args([script, &port, &version, transport])
            .output()
            .expect("python3 runs")
    })
    .await
    .expect("joins");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim() == "OK",
        "paho scenario failed (needs `pip install paho-mqtt`):\n{stdout}\n{stderr}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paho_v311_qos_mqtt_4_3_retained_mqtt_3_3_1_5_persistent_session_mqtt_3_1_2_5_will_mqtt_3_1_2_8_shared(
) {
    scenario("311", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paho_v5_qos_mqtt_4_3_properties_mqtt_3_3_2_17_retained_mqtt_3_3_1_5_persistent_session_mqtt_3_1_2_23_will_mqtt_3_1_2_8_shared_mqtt_4_8_2(
) {
    scenario("5", false).await;
}

/// MQTT over WebSocket, subprotocol "mqtt" [MQTT-6.0.0-3], binary frames [MQTT-6.0.0-1].
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paho_mqtt_6_0_0_over_websocket_both_versions() {
    scenario("311", true).await;
    scenario("5", true).await;
}
