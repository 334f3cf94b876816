//! The MQTT bridge against a real Mosquitto, started and stopped here: records published
//! while Mosquitto is down all reach it after it comes back, across a kill -9 of fogline
//! in the middle of forwarding (duplicates counted, none lost); messages published on
//! Mosquitto come into the stream, also those queued while fogline was killed; `both`
//! sends nothing back where it came from; and a bridge reaches a TLS listener that requires
//! a client certificate, while bridges with the wrong CA or no certificate say why they
//! cannot.
//!
//! Needs `mosquitto` (`bench/peers/install.sh mosquitto`). Without it the tests are
//! skipped, unless `FOGLINE_TEST_MOSQUITTO=1` (set by `scripts/test.sh`) makes that a
//! failure.

#[path = "../../fogline-net/tests/pki/mod.rs"]
mod pki;
mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fogline_client::{Client, ClientOptions, ConsumerOptions, PublishRecord};
use serde_json::Value;

/// Longest wait for anything to happen.
const WAIT: Duration = Duration::from_secs(60);

fn mosquitto_bin() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/usr/local/sbin")])
        .map(|d| d.join("mosquitto"))
        .find(|p| p.is_file())
}

/// The mosquitto binary, or `None` (and the reason printed) when the test is skipped.
fn need_mosquitto() -> Option<PathBuf> {
    let found = mosquitto_bin();
    if found.is_none() {
        let why = "mosquitto is not installed (bench/peers/install.sh mosquitto)";
        assert!(
            std::env::var("FOGLINE_TEST_MOSQUITTO").as_deref() != Ok("1"),
            "FOGLINE_TEST_MOSQUITTO=1 but {why}"
        );
        eprintln!("skipped: {why}");
    }
    found
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// A Mosquitto of the test's own, persistent (sessions survive its restarts).
struct Mosquitto {
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    /// A second listener, TLS with the certificates of `with_tls`.
    tls_port: Option<u16>,
    child: Option<Child>,
}

impl Mosquitto {
    fn new(bin: PathBuf, dir: &Path) -> Self {
        let dir = dir.join("mosquitto");
        std::fs::create_dir_all(&dir).unwrap();
        let port = free_port();
        // `user root` keeps a root mosquitto from switching to a user that cannot write
        // here; no queue limit, so a slow subscriber loses nothing.
        std::fs::write(
            dir.join("mosquitto.conf"),
            format!(
                "listener {port} 127.0.0.1\nallow_anonymous true\npersistence true\n\
                 persistence_location {}/\nmax_queued_messages 0\nset_tcp_nodelay true\n\
                 log_dest file {}/log\nuser root\n",
                dir.display(),
                dir.display()
            ),
        )
        .unwrap();
        Mosquitto {
            bin,
            dir,
            port,
            tls_port: None,
            child: None,
        }
    }

    /// Adds a TLS listener with `p`'s server certificate that requires a client
    /// certificate signed by `p`'s CA.
    fn with_tls(mut self, p: &pki::Pki) -> Self {
        let port = free_port();
        let conf = self.dir.join("mosquitto.conf");
        let mut text = std::fs::read_to_string(&conf).unwrap();
        text += &format!(
            "listener {port} 127.0.0.1\ncafile {}\ncertfile {}\nkeyfile {}\n\
             require_certificate true\n",
            p.ca.display(),
            p.server_cert.display(),
            p.server_key.display()
        );
        std::fs::write(conf, text).unwrap();
        self.tls_port = Some(port);
        self
    }

    fn start(&mut self) {
        let child = Command::new(&self.bin)
            .arg("-c")
            .arg(self.dir.join("mosquitto.conf"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mosquitto starts");
        self.child = Some(child);
        let deadline = Instant::now() + WAIT;
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "mosquitto did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM: Mosquitto saves its sessions and exits.
    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let deadline = Instant::now() + WAIT;
            while c.try_wait().unwrap().is_none() {
                assert!(Instant::now() < deadline, "mosquitto did not stop");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// An independent MQTT 3.1.1 client on Mosquitto (rumqttc's, not the bridge's MQTT 5
/// path) with a persistent session, recording every message it receives.
struct Checker {
    client: rumqttc::AsyncClient,
    got: Arc<Mutex<Vec<(String, String)>>>,
    subscribed: Arc<Mutex<bool>>,
    _task: tokio::task::JoinHandle<()>,
}

impl Checker {
    fn start(port: u16, id: &str) -> Self {
        let mut o = rumqttc::MqttOptions::new(id, "127.0.0.1", port);
        o.set_clean_session(false)
            .set_keep_alive(Duration::from_secs(10));
        let (client, mut el) = rumqttc::AsyncClient::new(o, 100);
        let got = Arc::new(Mutex::new(Vec::new()));
        let subscribed = Arc::new(Mutex::new(false));
        let (g, s) = (got.clone(), subscribed.clone());
        let task = tokio::spawn(async move {
            loop {
                match el.poll().await {
                    Ok(rumqttc::Event::Incoming(rumqttc::Packet::Publish(p))) => {
                        let payload = String::from_utf8_lossy(&p.payload).to_string();
                        g.lock().unwrap().push((p.topic, payload));
                    }
                    Ok(rumqttc::Event::Incoming(rumqttc::Packet::SubAck(_))) => {
                        *s.lock().unwrap() = true;
                    }
                    Ok(_) => {}
                    // Mosquitto is down: the next poll connects again.
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        });
        Checker {
            client,
            got,
            subscribed,
            _task: task,
        }
    }

    async fn subscribe(&self, filter: &str) {
        self.client
            .subscribe(filter, rumqttc::QoS::AtLeastOnce)
            .await
            .unwrap();
        wait_for("the checker's SUBACK", || *self.subscribed.lock().unwrap()).await;
    }

    fn got(&self) -> Vec<(String, String)> {
        self.got.lock().unwrap().clone()
    }
}

/// Publishes `payload` on `topic` at Mosquitto (QoS 1) from a client of its own, which is
/// returned to keep it connected.
async fn publish_on_mosquitto(
    port: u16,
    topic: &str,
    payload: &'static str,
) -> (rumqttc::AsyncClient, tokio::task::JoinHandle<()>) {
    let mut o = rumqttc::MqttOptions::new("remote-publisher", "127.0.0.1", port);
    o.set_keep_alive(Duration::from_secs(10));
    let (publisher, mut el) = rumqttc::AsyncClient::new(o, 10);
    let poll = tokio::spawn(async move { while el.poll().await.is_ok() {} });
    publisher
        .publish(topic, rumqttc::QoS::AtLeastOnce, false, payload)
        .await
        .unwrap();
    (publisher, poll)
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "waited {WAIT:?} for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn bridge_status(server: &support::Served, name: &str) -> Value {
    let http = server.http.clone().unwrap();
    support::admin(&http, "GET", &format!("/api/v1/bridges/{name}"), None).await
}

async fn wait_status(
    server: &support::Served,
    name: &str,
    what: &str,
    ok: impl Fn(&Value) -> bool,
) {
    let deadline = Instant::now() + WAIT;
    loop {
        let s = bridge_status(server, name).await;
        if ok(&s) {
            return;
        }
        assert!(Instant::now() < deadline, "waited {WAIT:?} for {what}: {s}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every record of the server's `default` stream matching `filter`, read from the start
/// until `want` arrived or `wait` ran out.
async fn stream_records(
    server: &support::Served,
    filter: &str,
    want: usize,
    wait: Duration,
) -> Vec<fogline_client::StoredMessage> {
    let client = Client::connect(&server.native, ClientOptions::default())
        .await
        .unwrap();
    let mut c = client
        .consumer(
            "default",
            ConsumerOptions {
                filter: filter.into(),
                ack_timeout: None,
                ..ConsumerOptions::default()
            },
        )
        .await
        .unwrap();
    let mut out = Vec::new();
    let deadline = Instant::now() + wait;
    while out.len() < want && Instant::now() < deadline {
        out.extend(c.fetch(1000, Duration::from_millis(200)).await.unwrap());
    }
    out
}

fn header(r: &fogline_client::StoredMessage, key: &str) -> Option<String> {
    fogline_wire::header_entries(&r.headers)
        .ok()?
        .find(|(k, _)| *k == key)
        .map(|(_, v)| String::from_utf8_lossy(v).to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_reach_mosquitto_across_its_outage_and_a_kill_9() {
    let Some(bin) = need_mosquitto() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut mosquitto = Mosquitto::new(bin, dir.path());
    mosquitto.start();
    // Subscribed before anything is published; its session outlives Mosquitto's restart.
    let checker = Checker::start(mosquitto.port, "checker");
    checker.subscribe("remote/#").await;
    mosquitto.stop();

    let config = format!(
        "[[bridge.mqtt]]\nname = \"up\"\naddress = \"127.0.0.1:{}\"\nstream = \"default\"\n\
         topics = [\"data/# out 1 \\\"\\\" remote/\"]\n",
        mosquitto.port
    );
    let mut server = support::serve_config(dir.path(), &config);
    const N: usize = 100_000;
    let client = Client::connect(&server.native, ClientOptions::default())
        .await
        .unwrap();
    let mut acks = Vec::with_capacity(N);
    for i in 1..=N {
        let r = PublishRecord::new(format!("data/r{}", i % 7), i.to_string());
        acks.push(client.send_acked(&r).await.unwrap());
    }
    for a in acks {
        a.await.unwrap();
    }
    drop(client);
    // Mosquitto is down: the records wait in the stream.
    wait_status(&server, "up", "the bridge down with N waiting", |s| {
        s["state"] == "down" && s["lag_records"] == N && s["records"] == 0
    })
    .await;

    mosquitto.start();
    // Killed once the bridge saved a position past the start, so the restart resumes from
    // it (and what was sent after it goes again).
    let pos = dir.path().join("data/.bridge/up.pos");
    wait_for("a saved position past the start", || {
        std::fs::read_to_string(&pos)
            .ok()
            .and_then(|t| t.trim().rsplit_once(' ').map(|(_, o)| o.to_string()))
            .is_some_and(|o| o != "0")
    })
    .await;
    server.kill();
    let at_kill = checker.got().len();
    let saved = std::fs::read_to_string(&pos).unwrap().trim().to_string();
    assert!(
        at_kill < N,
        "all {N} records arrived before the kill: the kill was not mid-forward"
    );

    let server = support::serve_config(dir.path(), &config);
    wait_for("records 1..N at Mosquitto", || {
        let mut seen: Vec<usize> = checker
            .got()
            .iter()
            .map(|(_, p)| p.parse().unwrap())
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len() == N
    })
    .await;
    let got = checker.got();
    let mut count: HashMap<usize, usize> = HashMap::new();
    for (topic, payload) in &got {
        let i: usize = payload.parse().unwrap();
        assert_eq!(topic, &format!("remote/data/r{}", i % 7));
        *count.entry(i).or_default() += 1;
    }
    assert!((1..=N).all(|i| count.contains_key(&i)), "a record was lost");
    let duplicates = got.len() - N;
    wait_status(&server, "up", "the bridge caught up", |s| {
        s["state"] == "running" && s["lag_records"] == 0
    })
    .await;
    let s = bridge_status(&server, "up").await;
    let counted = s["duplicates"].as_u64().unwrap() as usize;
    eprintln!(
        "{N} records, {at_kill} at Mosquitto at the kill (position saved: {saved}), \
         {duplicates} duplicates received, {counted} counted as possible duplicates"
    );
    // Every duplicate the checker saw was one the bridge knew it might cause.
    assert!(
        duplicates <= counted,
        "{duplicates} duplicates arrived, the bridge counted {counted}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_on_mosquitto_come_into_the_stream_also_those_queued_while_killed() {
    let Some(bin) = need_mosquitto() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut mosquitto = Mosquitto::new(bin, dir.path());
    mosquitto.start();
    let config = format!(
        "[[bridge.mqtt]]\nname = \"up\"\naddress = \"127.0.0.1:{}\"\n\
         topics = [\"cmd/# in 1 local/ remote/\"]\n",
        mosquitto.port
    );
    let mut server = support::serve_config(dir.path(), &config);
    wait_status(&server, "up", "the bridge connected", |s| {
        s["state"] == "running"
    })
    .await;

    // An MQTT 5 publisher on Mosquitto, with a user property on every message.
    let mut o = rumqttc::v5::MqttOptions::new("publisher", "127.0.0.1", mosquitto.port);
    o.set_keep_alive(Duration::from_secs(10));
    let (publisher, mut el) = rumqttc::v5::AsyncClient::new(o, 100);
    let acked = Arc::new(Mutex::new(0usize));
    let a = acked.clone();
    let _poll = tokio::spawn(async move {
        while let Ok(ev) = el.poll().await {
            if let rumqttc::v5::Event::Incoming(rumqttc::v5::Incoming::PubAck(_)) = ev {
                *a.lock().unwrap() += 1;
            }
        }
    });
    let publish = |from: usize, to: usize| {
        let publisher = publisher.clone();
        async move {
            for i in from..=to {
                let props = rumqttc::v5::mqttbytes::v5::PublishProperties {
                    user_properties: vec![("n".into(), i.to_string())],
                    ..Default::default()
                };
                publisher
                    .publish_with_properties(
                        format!("remote/cmd/{}", i % 3),
                        rumqttc::v5::mqttbytes::QoS::AtLeastOnce,
                        false,
                        i.to_string(),
                        props,
                    )
                    .await
                    .unwrap();
            }
        }
    };
    publish(1, 20).await;
    let records = stream_records(&server, "local/#", 20, WAIT).await;
    assert_eq!(records.len(), 20);
    // Killed, then more is published: Mosquitto keeps it for the bridge's session.
    server.kill();
    publish(21, 40).await;
    wait_for("Mosquitto's PUBACKs", || *acked.lock().unwrap() == 40).await;
    let server = support::serve_config(dir.path(), &config);
    let records = stream_records(&server, "local/#", 40, WAIT).await;
    let mut seen: Vec<usize> = Vec::new();
    for r in &records {
        let i: usize = std::str::from_utf8(&r.payload).unwrap().parse().unwrap();
        assert_eq!(r.topic.as_str(), format!("local/cmd/{}", i % 3));
        assert_eq!(header(r, "fogline-bridge").as_deref(), Some("up"));
        assert_eq!(header(r, "n"), Some(i.to_string()));
        seen.push(i);
    }
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen, (1..=40).collect::<Vec<_>>());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_sends_nothing_back_where_it_came_from() {
    let Some(bin) = need_mosquitto() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut mosquitto = Mosquitto::new(bin, dir.path());
    mosquitto.start();
    let checker = Checker::start(mosquitto.port, "checker");
    checker.subscribe("loop/#").await;
    let config = format!(
        "[[bridge.mqtt]]\nname = \"up\"\naddress = \"127.0.0.1:{}\"\nstream = \"default\"\n\
         topics = [\"loop/# both 1\"]\n",
        mosquitto.port
    );
    let server = support::serve_config(dir.path(), &config);
    wait_status(&server, "up", "the bridge connected", |s| {
        s["state"] == "running"
    })
    .await;

    // One record published here, one message published there.
    let client = Client::connect(&server.native, ClientOptions::default())
        .await
        .unwrap();
    client
        .publish_acked(&PublishRecord::new("loop/local", "L"))
        .await
        .unwrap();
    let _publisher = publish_on_mosquitto(mosquitto.port, "loop/remote", "R").await;

    let count = |got: &[(String, String)], p: &str| got.iter().filter(|(_, x)| x == p).count();
    wait_for("both messages at Mosquitto", || {
        let got = checker.got();
        count(&got, "L") >= 1 && count(&got, "R") >= 1
    })
    .await;
    let records = stream_records(&server, "loop/#", 2, WAIT).await;
    assert_eq!(records.len(), 2);
    // Long enough for an echo to go round many times, had there been one.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let got = checker.got();
    assert_eq!((count(&got, "L"), count(&got, "R")), (1, 1), "{got:?}");
    // Asks for one more than there should be, for a while.
    let records = stream_records(&server, "loop/#", 3, Duration::from_secs(1)).await;
    let payloads: Vec<&[u8]> = records.iter().map(|r| &r.payload[..]).collect();
    assert_eq!(payloads, [&b"L"[..], &b"R"[..]]);
    let s = bridge_status(&server, "up").await;
    assert_eq!(s["records"], 2, "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bridge_reaches_a_tls_listener_with_its_client_certificate() {
    let Some(bin) = need_mosquitto() else { return };
    let dir = tempfile::tempdir().unwrap();
    let p = pki::Pki::new(
        &dir.path().join("pki"),
        pki::Kind::Rsa,
        "bridge CA",
        "bridge",
    );
    let other = pki::Pki::new(&dir.path().join("other"), pki::Kind::Ec, "other CA", "x");
    let mut mosquitto = Mosquitto::new(bin, dir.path()).with_tls(&p);
    mosquitto.start();
    let tls_port = mosquitto.tls_port.unwrap();
    let checker = Checker::start(mosquitto.port, "checker");
    checker.subscribe("tls/#").await;
    let bridge = |name: &str, ca: &Path, cert: Option<&pki::Pki>| {
        let mut b = format!(
            "[[bridge.mqtt]]\nname = \"{name}\"\naddress = \"127.0.0.1:{tls_port}\"\n\
             stream = \"default\"\ntopics = [\"tls/# both 1\"]\nretry_max = \"1s\"\n\
             bridge_cafile = {ca:?}\n"
        );
        if let Some(c) = cert {
            b += &format!(
                "bridge_certfile = {:?}\nbridge_keyfile = {:?}\n",
                c.client_cert, c.client_key
            );
        }
        b
    };
    let config = [
        bridge("secure", &p.ca, Some(&p)),
        bridge("wrong-ca", &other.ca, Some(&p)),
        bridge("no-cert", &p.ca, None),
    ]
    .concat();
    let server = support::serve_config(dir.path(), &config);
    wait_status(&server, "secure", "the TLS bridge connected", |s| {
        s["state"] == "running"
    })
    .await;

    // Out: a record published here reaches Mosquitto's subscriber.
    let client = Client::connect(&server.native, ClientOptions::default())
        .await
        .unwrap();
    client
        .publish_acked(&PublishRecord::new("tls/out", "sealed"))
        .await
        .unwrap();
    wait_for("the record at Mosquitto", || {
        checker.got().contains(&("tls/out".into(), "sealed".into()))
    })
    .await;
    // In: a message published on Mosquitto comes into the stream through the TLS bridge.
    let _publisher = publish_on_mosquitto(mosquitto.port, "tls/in", "inbound").await;
    let records = stream_records(&server, "tls/in", 1, WAIT).await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(&records[0].payload[..], b"inbound");
    assert_eq!(
        header(&records[0], "fogline-bridge").as_deref(),
        Some("secure")
    );

    // The others never connect, and say why.
    let error_has = |what: &'static str| {
        move |s: &Value| s["last_error"].as_str().is_some_and(|e| e.contains(what))
    };
    wait_status(
        &server,
        "wrong-ca",
        "the wrong CA's error",
        error_has("not signed by a CA of the CA file"),
    )
    .await;
    wait_status(
        &server,
        "no-cert",
        "the missing certificate's error",
        error_has("requires a client certificate"),
    )
    .await;
    for name in ["wrong-ca", "no-cert"] {
        let s = bridge_status(&server, name).await;
        assert_ne!(s["state"], "running", "{s}");
    }
    let status = bridge_status(&server, "secure").await;
    assert!(
        status["target"]
            .as_str()
            .is_some_and(|r| r.starts_with("mqtts ")),
        "{status}"
    );
}
