//! The fogline drivers (native and MQTT) against a real fogline server, run in-process on
//! ports chosen by the OS (the benchmark itself runs `fogline serve` as a separate process).

use std::time::Duration;

use fogline_bench::cell::{Budget, CellResult, CellSpec, Rate, Reading};
use fogline_bench::runner::run_cell;
use fogline_bench::{drivers, Durability, System};
use fogline_broker::StorageMode;
use fogline_node::{Config, Node};
use tokio::sync::oneshot;

// Certificates made with `openssl`, as fogline's own TLS tests make them.
#[cfg(feature = "peers")]
#[path = "../../fogline-net/tests/pki/mod.rs"]
mod pki;

struct TestServer {
    native: String,
    // Read only by the MQTT tests, which need the `peers` feature.
    #[cfg_attr(not(feature = "peers"), allow(dead_code))]
    mqtt: String,
    stop: Option<oneshot::Sender<()>>,
    _dir: tempfile::TempDir,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

async fn server(storage: StorageMode) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = Config::default();
    cfg.native.listen = vec!["127.0.0.1:0".into()];
    cfg.mqtt.listen = vec!["127.0.0.1:0".into()];
    cfg.admin.listen = vec![];
    cfg.broker.storage = storage;
    cfg.broker.data_dir = dir.path().to_path_buf();
    let node = Node::start(cfg).await.unwrap();
    let native = node.address("native").unwrap();
    let mqtt = node.address("mqtt").unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(node.run(async move {
        let _ = rx.await;
    }));
    TestServer {
        native,
        mqtt,
        stop: Some(tx),
        _dir: dir,
    }
}

async fn cell(system: System, addr: &str, durability: Durability, spec: &CellSpec) -> CellResult {
    let d = drivers::connect(system, addr, durability).unwrap();
    let topic = format!("fbtest-{}", fastrand::u32(..));
    tokio::time::timeout(Duration::from_secs(60), run_cell(d, spec, &topic, None, 1))
        .await
        .expect("cell finished in time")
        .unwrap()
}

fn spec(size: usize, rate: Rate, n: u64, subs: u32) -> CellSpec {
    let mut s = CellSpec::new("test", size, rate, Budget::Messages(n));
    s.subscribers = subs;
    s
}

fn assert_exact(system: System, r: &CellResult, expected: u64) {
    let d = r.delivery;
    assert_eq!(d.expected, expected, "{system}: {d:?}");
    assert_eq!(d.received, expected, "{system}: {d:?} {:?}", r.errors);
    assert_eq!(
        (d.duplicates, d.reordered, d.unexpected),
        (0, 0, 0),
        "{system}: {d:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_live_fan_out_and_replay() {
    let s = server(StorageMode::Memory).await;
    let sys = System::Fogline;
    // fogline's default subscription policy blocks the publisher instead of dropping, so
    // even the max-rate run must deliver everything.
    let r = cell(
        sys,
        &s.native,
        Durability::Volatile,
        &spec(256, Rate::Max, 5000, 4),
    )
    .await;
    assert_exact(sys, &r, 20_000);
    assert_eq!(r.latency.count, 20_000);
    let r = cell(
        sys,
        &s.native,
        Durability::Volatile,
        &spec(100 << 10, Rate::Hz(200.0), 40, 1),
    )
    .await;
    assert_exact(sys, &r, 40);
    let mut replay = spec(1024, Rate::Max, 1000, 1);
    replay.reading = Reading::Replay;
    let r = cell(sys, &s.native, Durability::Volatile, &replay).await;
    assert_exact(sys, &r, 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_persistent_acked() {
    let s = server(StorageMode::Mmap).await;
    let r = cell(
        System::Fogline,
        &s.native,
        Durability::Persistent,
        &spec(1024, Rate::Max, 2000, 1),
    )
    .await;
    assert_exact(System::Fogline, &r, 2000);
    assert!(r.errors.is_empty(), "{:?}", r.errors);
}

// The MQTT driver is rumqttc, compiled in with the `peers` feature.
#[cfg(feature = "peers")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqtt_live() {
    let s = server(StorageMode::Memory).await;
    let sys = System::FoglineMqtt;
    let r = cell(
        sys,
        &s.mqtt,
        Durability::Volatile,
        &spec(256, Rate::Hz(500.0), 300, 2),
    )
    .await;
    assert_exact(sys, &r, 600);
    let r = cell(
        sys,
        &s.mqtt,
        Durability::Persistent,
        &spec(256, Rate::Max, 500, 1),
    )
    .await;
    assert_exact(sys, &r, 500);
}

/// More QoS 1 messages than the driver keeps unacknowledged, with no flush between: `send`
/// reads PUBACKs as it goes, and `flush` returns once every one came back.
#[cfg(feature = "peers")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqtt_qos1_window() {
    let s = server(StorageMode::Memory).await;
    let d = drivers::connect(System::FoglineMqtt, &s.mqtt, Durability::Persistent).unwrap();
    let topic = format!("fbtest-{}", fastrand::u32(..));
    let mut sub = d.subscriber(&topic).await.unwrap();
    let mut publ = d.publisher(&topic).await.unwrap();
    let n = 3000u32;
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        while got.len() < n as usize {
            match tokio::time::timeout(Duration::from_secs(20), sub.recv()).await {
                Ok(Ok(Some(p))) => got.push(u32::from_be_bytes(p.payload[..4].try_into().unwrap())),
                other => panic!("after {} messages: {other:?}", got.len()),
            }
        }
        got
    });
    for i in 0..n {
        publ.send(bytes::Bytes::copy_from_slice(&i.to_be_bytes()))
            .await
            .unwrap();
    }
    tokio::time::timeout(Duration::from_secs(20), publ.flush())
        .await
        .expect("every PUBACK came")
        .unwrap();
    publ.close().await.unwrap();
    let got = reader.await.unwrap();
    assert_eq!(got, (0..n).collect::<Vec<_>>());
}

/// The MQTT driver's TLS and login options (`fogline-bench security`) against fogline's
/// TLS listener with a password file and an ACL: a cell delivers everything over TLS as the
/// user the ACL grants the topic, and a wrong password is refused.
#[cfg(feature = "peers")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqtt_over_tls_with_a_login() {
    use drivers::mqtt::{MqttDriver, MqttTls};
    use fogline_auth::passwd::{PasswordFile, DEFAULT_ITERATIONS};
    use fogline_bench::Driver;
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let p = pki::Pki::new(
        &dir.path().join("pki"),
        pki::Kind::Rsa,
        "bench CA",
        "unused",
    );
    let (acl, passwd) = (dir.path().join("acl"), dir.path().join("passwd"));
    std::fs::write(&acl, "user bench\ntopic readwrite fbtest/#\n").unwrap();
    let mut users = PasswordFile::new();
    users.set("bench", b"pw", DEFAULT_ITERATIONS).unwrap();
    users.save(&passwd).unwrap();
    let mut cfg = Config::default();
    cfg.native.listen = vec!["127.0.0.1:0".into()];
    cfg.mqtt.listen = vec![];
    cfg.mqtt.tls_listen = vec!["127.0.0.1:0".into()];
    cfg.mqtt.tls.certfile = Some(p.server_cert.clone());
    cfg.mqtt.tls.keyfile = Some(p.server_key.clone());
    cfg.admin.listen = vec![];
    cfg.auth.password_file = Some(passwd);
    cfg.auth.acl_file = Some(acl);
    cfg.auth.allow_anonymous = Some(false);
    cfg.broker.storage = StorageMode::Memory;
    cfg.broker.data_dir = dir.path().join("data");
    let node = Node::start(cfg).await.unwrap();
    let addr = node.address("mqtts").expect("a TLS listener");
    let (stop, stopped) = oneshot::channel::<()>();
    let served = tokio::spawn(node.run(async move {
        let _ = stopped.await;
    }));

    let tls = MqttTls::new(&p.ca, "localhost", None).unwrap();
    let d = MqttDriver::new("fogline-mqtts", &addr, Durability::Persistent)
        .unwrap()
        .with_tls(tls.clone());
    let session = d.tls_session().await.unwrap().unwrap();
    assert!(session.starts_with("TLSv1_3"), "{session}");
    let d = Arc::new(d.with_login("bench", "pw"));
    let r = tokio::time::timeout(
        Duration::from_secs(60),
        run_cell(d, &spec(1024, Rate::Max, 3000, 1), "fbtest/tls", None, 1),
    )
    .await
    .expect("cell finished in time")
    .unwrap();
    assert_exact(System::FoglineMqtt, &r, 3000);

    let wrong = MqttDriver::new("fogline-mqtts", &addr, Durability::Volatile)
        .unwrap()
        .with_tls(tls)
        .with_login("bench", "not the password");
    let refused = wrong.publisher("fbtest/tls").await.err().expect("refused");
    assert!(refused.to_string().contains("refused"), "{refused}");
    let _ = stop.send(());
    served.await.unwrap().unwrap();
}

#[test]
fn every_system_has_a_driver_in_this_build() {
    for s in System::ALL {
        if s.compiled_in() {
            assert!(
                drivers::connect(s, "127.0.0.1:1", Durability::Volatile).is_ok(),
                "{s}"
            );
        }
    }
}
