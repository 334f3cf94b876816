//! Interop with the Mosquitto command-line clients (Debian package
//! mosquitto-clients): both protocol versions, every QoS, retained
//! messages, persistent sessions, v5 user properties.

mod common;

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::*;

fn run(args: Vec<String>) -> Output {
    let (cmd, rest) = args.split_first().expect("a command");
    Command::new(cmd)
        .args(rest)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!("{cmd} must be installed (Debian package mosquitto-clients): {e}")
        })
}

fn args(port: u16, v: &str, extra: &[&str]) -> Vec<String> {
    let mut a = vec![
        "-h".to_string(),
        "127.0.0.1".into(),
        "-p".into(),
        port.to_string(),
        "-V".into(),
        v.into(),
    ];
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// Starts mosquitto_sub in the background and waits until its subscription exists.
async fn sub(s: &TestServer, v: &str, extra: &[&str]) -> tokio::task::JoinHandle<Output> {
    let before = s.broker.subscription_count();
    let mut a = vec!["mosquitto_sub".to_string()];
    a.extend(args(s.port, v, extra));
    let task = tokio::task::spawn_blocking(move || run(a));
    let deadline = std::time::Instant::now() + WAIT;
    while s.broker.subscription_count() <= before {
        assert!(
            std::time::Instant::now() < deadline,
            "mosquitto_sub did not subscribe"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task
}

async fn sub_now(port: u16, v: &str, extra: &[&str]) -> Output {
    let mut a = vec!["mosquitto_sub".to_string()];
    a.extend(args(port, v, extra));
    tokio::task::spawn_blocking(move || run(a))
        .await
        .expect("joins")
}

async fn publish(port: u16, v: &str, extra: &[&str]) {
    let mut a = vec!["mosquitto_pub".to_string()];
    a.extend(args(port, v, extra));
    let out = tokio::task::spawn_blocking(move || run(a))
        .await
        .expect("joins");
    assert!(
        out.status.success(),
        "mosquitto_pub failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn stdout(out: Output) -> String {
    assert!(
        out.status.success(),
        "mosquitto_sub failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mosquitto_mqtt_4_3_every_qos_both_versions_and_mqtt_3_3_4_2_downgrade() {
    let s = TestServer::start(|_| {}).await;
    for v in ["mqttv311", "mqttv5"] {
        // `sub` detects a new subscription by the count going up, so first let
        // the previous round's clients finish disconnecting (their cleanup
        // could otherwise cancel out the new subscription in the count).
        let deadline = std::time::Instant::now() + WAIT;
        while s.broker.subscription_count() > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "old subscriptions linger"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let topic = format!("mos/{v}");
        let filter = format!("{topic}/#");
        let sub2 = sub(
            &s,
            v,
            &[
                "-t", &filter, "-q", "2", "-C", "3", "-W", "10", "-F", "%t %q %p",
            ],
        )
        .await;
        let sub1 = sub(
            &s,
            v,
            &[
                "-t", &filter, "-q", "1", "-C", "3", "-W", "10", "-F", "%t %q %p",
            ],
        )
        .await;
        for q in ["0", "1", "2"] {
            publish(
                s.port,
                v,
                &[
                    "-t",
                    &format!("{topic}/q{q}"),
                    "-q",
                    q,
                    "-m",
                    &format!("m{q}"),
                ],
            )
            .await;
        }
        let got2 = stdout(sub2.await.expect("joins"));
        let got1 = stdout(sub1.await.expect("joins"));
        assert_eq!(
            got2,
            format!("{topic}/q0 0 m0\n{topic}/q1 1 m1\n{topic}/q2 2 m2\n")
        );
        assert_eq!(
            got1,
            format!("{topic}/q0 0 m0\n{topic}/q1 1 m1\n{topic}/q2 1 m2\n")
        );
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mosquitto_mqtt_3_3_1_retained_messages_replace_and_delete() {
    let s = TestServer::start(|_| {}).await;
    publish(
        s.port,
        "mqttv311",
        &["-t", "ret/a", "-r", "-q", "1", "-m", "first"],
    )
    .await;
    publish(
        s.port,
        "mqttv5",
        &["-t", "ret/a", "-r", "-q", "1", "-m", "second"],
    )
    .await;
    publish(
        s.port,
        "mqttv311",
        &["-t", "ret/b", "-r", "-q", "1", "-m", "b"],
    )
    .await;
    publish(s.port, "mqttv311", &["-t", "ret/b", "-r", "-q", "1", "-n"]).await;
    // The retained message arrives at once, so these run to completion.
    for v in ["mqttv311", "mqttv5"] {
        let out = sub_now(
            s.port,
            v,
            &["-t", "ret/#", "-C", "1", "-W", "5", "-F", "%t %r %p"],
        )
        .await;
        assert_eq!(stdout(out), "ret/a 1 second\n");
    }
    // Only the retained one: nothing else is pending (ret/b was deleted).
    let out = sub_now(
        s.port,
        "mqttv311",
        &["-t", "ret/#", "--retained-only", "-W", "2", "-F", "%t"],
    )
    .await;
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ret/a\n");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mosquitto_mqtt_3_1_2_5_persistent_session_receives_qos1_messages_sent_while_offline() {
    let s = TestServer::start(|_| {}).await;
    for v in ["mqttv311", "mqttv5"] {
        let id = format!("offline-{v}");
        let topic = format!("off/{v}");
        let mut extra = vec!["-i", &id, "-c", "-t", &topic, "-q", "1", "-W", "1"];
        if v == "mqttv5" {
            extra.extend(["-x", "300"]);
        }
        // Subscribe once with a persistent session, then leave.
        let first = sub(&s, v, &extra).await;
        let _ = first.await;
        publish(s.port, v, &["-t", &topic, "-q", "1", "-m", "while-away"]).await;
        let mut again = vec![
            "-i", &id, "-c", "-t", &topic, "-q", "1", "-C", "1", "-W", "5",
        ];
        if v == "mqttv5" {
            again.extend(["-x", "300"]);
        }
        let out = sub_now(s.port, v, &again).await;
        assert_eq!(stdout(out), "while-away\n", "{v}");
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mosquitto_mqtt_3_3_2_17_and_3_3_2_20_v5_user_properties_and_content_type_pass_through() {
    let s = TestServer::start(|_| {}).await;
    let out = sub(
        &s,
        "mqttv5",
        &["-t", "props", "-C", "1", "-W", "5", "-F", "%P|%C|%p"],
    )
    .await;
    publish(
        s.port,
        "mqttv5",
        &[
            "-t",
            "props",
            "-m",
            "x",
            "-D",
            "publish",
            "user-property",
            "site",
            "lab",
            "-D",
            "publish",
            "content-type",
            "text/plain",
        ],
    )
    .await;
    assert_eq!(stdout(out.await.expect("joins")), "site:lab|text/plain|x\n");
    s.stop().await;
}
