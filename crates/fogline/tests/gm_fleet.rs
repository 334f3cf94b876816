//! Distributed geometric monitoring: 26 `fogline serve` processes on loopback, each running
//! the `[gm]` monitor over its own broker's topics and reading its peers' updates from theirs,
//! replay the variance of a generated lab in lock step (convex zone, ball, and the convex zone
//! and the band with prediction). Every update (origin, sequence number,
//! vector, round) and every node's decision at the end of every epoch must be the
//! simulator's (`fogline_gm::sim::rounds`), and every decision the exact oracle's.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fogline_client::{Client, ClientOptions};
use fogline_gm::data::parametric::parametric;
use fogline_gm::proto::broadcast::Policy;
use fogline_gm::service::{Alarm, Reading, Status, Tick, Update};
use fogline_gm::{oracle, sim, Function, Kind, Side, Zone};
use tokio::sync::mpsc;

#[path = "../../fogline-net/tests/pki/mod.rs"]
mod pki;
use pki::Pki;

const N: usize = 26;

/// Updates by (epoch, round): (origin, sequence number, vector).
type Rounds = BTreeMap<(u64, u32), Vec<(usize, u64, Vec<i64>)>>;
const WAIT: Duration = Duration::from_secs(30);

/// The processes; dropping the fleet kills each by its pid.
struct Fleet(Vec<Child>);

impl Drop for Fleet {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A port free now, below the kernel's ephemeral range (32768 up by default): a port the
/// kernel handed out and took back can go to any outgoing connection before the node that
/// was to listen on it starts (a fleet makes hundreds), which then fails with "address in
/// use". The tests of this file, which run at once, take ports in turn from a random start,
/// so no two of them are handed the same one.
fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let _ = NEXT.compare_exchange(
        0,
        fastrand::u16(20_000..26_000),
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..1000 {
        let port = NEXT.fetch_add(1, Ordering::SeqCst);
        assert!(port < 32_768, "ran out of ports below the ephemeral range");
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port");
}

fn free_addrs(n: usize) -> Vec<String> {
    (0..n)
        .map(|_| format!("127.0.0.1:{}", free_port()))
        .collect()
}

/// `n` processes; with the coordinator protocol (`extra`) the last one is the coordinator.
fn start_fleet(
    dir: &std::path::Path,
    n: usize,
    zone: Zone,
    lockstep: bool,
    extra: &dyn Fn(usize) -> String,
) -> (Fleet, Vec<String>) {
    let addrs = free_addrs(n);
    let fleet = spawn_fleet(dir, &addrs, &addrs, zone, lockstep, extra);
    (fleet, addrs)
}

/// A process per address of `addrs` (`--listen`), whose monitors reach each other at
/// `peers`; `extra(i)` ends node i's configuration (more `[gm]` keys, then other sections).
fn spawn_fleet(
    dir: &std::path::Path,
    addrs: &[String],
    peers: &[String],
    zone: Zone,
    lockstep: bool,
    extra: &dyn Fn(usize) -> String,
) -> Fleet {
    let n = peers.len();
    let peers = peers
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut fleet = Fleet(Vec::new());
    for (i, addr) in addrs.iter().enumerate() {
        let cfg = dir.join(format!("node{i}.toml"));
        std::fs::write(
            &cfg,
            format!(
                "[gm]\nname = \"lab\"\nid = {i}\nnodes = {}\nfunction = \"variance\"\nzone = \"{}\"\npeers = [{peers}]\nlockstep = {lockstep}\n{}",
                n - usize::from(extra(i).contains("coordinator")),
                zone.name(),
                extra(i)
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.join(format!("node{i}.log"))).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_fogline"))
            .args(["serve", "--config"])
            .arg(&cfg)
            .args(["--listen", addr, "--mqtt", "off", "--http", "off"])
            .args(["--storage", "memory", "--threads", "1", "--data-dir"])
            .arg(dir.join(format!("data{i}")))
            .env("FOGLINE_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("fogline serve starts");
        fleet.0.push(child);
    }
    fleet
}

async fn connect(addr: &str) -> Client {
    connect_with(addr, ClientOptions::default()).await
}

async fn connect_with(addr: &str, opts: ClientOptions) -> Client {
    for _ in 0..300 {
        if let Ok(c) = Client::connect(addr, opts.clone()).await {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{addr} does not answer");
}

/// Forwards every record of `filter` on every node into one channel.
async fn gather(clients: &[Client], filter: &str) -> mpsc::UnboundedReceiver<Vec<u8>> {
    let (tx, rx) = mpsc::unbounded_channel();
    for c in clients {
        let mut sub = c.subscribe(filter, Default::default()).await.unwrap();
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Some(m) = sub.recv().await {
                if tx.send(m.payload.to_vec()).is_err() {
                    break;
                }
            }
        });
    }
    rx
}

async fn next<T: serde::de::DeserializeOwned>(rx: &mut mpsc::UnboundedReceiver<Vec<u8>>) -> T {
    let bytes = tokio::time::timeout(WAIT, rx.recv())
        .await
        .expect("the fleet answers in time")
        .expect("open");
    serde_json::from_slice(&bytes).expect("JSON")
}

/// Waits until `n` monitors said they are ready. Bounded as a whole, not per message: the
/// ready ones say it again every 500 ms, so a node that never comes would otherwise be
/// waited for forever.
async fn await_ready(ready: &mut mpsc::UnboundedReceiver<Vec<u8>>, n: usize) {
    let deadline = std::time::Instant::now() + WAIT;
    let mut seen = std::collections::HashSet::new();
    while seen.len() < n {
        assert!(
            std::time::Instant::now() < deadline,
            "only {seen:?} of {n} monitors ready"
        );
        let r: serde_json::Value = next(ready).await;
        seen.insert(r["node"].as_u64().unwrap());
    }
}

fn json<T: serde::Serialize>(x: &T) -> Vec<u8> {
    serde_json::to_vec(x).unwrap()
}

/// Readings of `n` motes, gaps filled with the last reading, around the first crossing.
fn window(epochs: usize) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let trace = parametric(N, 22, 1500, 7);
    let f = Function::thesis(Kind::Variance);
    let vectors = trace.vectors(&f);
    let first = oracle::crossings(&oracle::sides(&f, &vectors))[0];
    let start = first.saturating_sub(epochs / 2);
    let mut t: Vec<f64> = (0..N)
        .map(|i| trace.temperature.iter().find_map(|r| r[i]).unwrap())
        .collect();
    let mut h: Vec<f64> = (0..N)
        .map(|i| trace.humidity.iter().find_map(|r| r[i]).unwrap())
        .collect();
    let (mut ts, mut hs) = (Vec::new(), Vec::new());
    for k in 0..start + epochs {
        for i in 0..N {
            if let (Some(a), Some(b)) = (trace.temperature[k][i], trace.humidity[k][i]) {
                t[i] = a;
                h[i] = b;
            }
        }
        if k >= start {
            ts.push(t.clone());
            hs.push(h.clone());
        }
    }
    (ts, hs)
}

async fn replay(zone: Zone, epochs: usize, predict: bool) {
    let dir = tempfile::tempdir().unwrap();
    let extra = |_| format!("predict = {predict}\n");
    let (_fleet, addrs) = start_fleet(dir.path(), N, zone, true, &extra);
    let mut clients = Vec::new();
    for a in &addrs {
        clients.push(connect(a).await);
    }
    let mut ready = gather(&clients, "gm/lab/ready").await;
    let mut statuses = gather(&clients, "gm/lab/status").await;
    let mut updates = gather(&clients, "gm/lab/update").await;
    await_ready(&mut ready, N).await;

    let (temps, hums) = window(epochs);
    let f = Function::thesis(Kind::Variance);
    let vectors: Vec<Vec<Vec<i64>>> = temps
        .iter()
        .zip(&hums)
        .map(|(t, h)| {
            (0..N)
                .map(|i| f.lift([f.quantise(0, t[i]), f.quantise(1, h[i])]))
                .collect()
        })
        .collect();
    let expected = sim::rounds::run_with(&f, &vectors, Policy::Zone(zone), predict);
    let truth = oracle::sides(&f, &vectors);

    let mut got_updates = Rounds::new();
    for (k, (t, h)) in temps.iter().zip(&hums).enumerate() {
        let k64 = k as u64;
        for (i, c) in clients.iter().enumerate() {
            let r = Reading {
                epoch: k64,
                temperature: t[i],
                humidity: h[i],
            };
            c.publish("gm/lab/reading", json(&r)).await.unwrap();
        }
        let mut senders = Vec::new();
        let mut sides = vec![None; N];
        for round in 0.. {
            let tick = Tick {
                epoch: k64,
                round,
                senders: senders.clone(),
            };
            for c in &clients {
                c.publish("gm/lab/tick", json(&tick)).await.unwrap();
            }
            let mut sent = Vec::new();
            for _ in 0..N {
                let s: Status = next(&mut statuses).await;
                assert_eq!((s.epoch, s.round), (k64, round), "{s:?}");
                sides[s.node] = s.side;
                if s.sent {
                    sent.push(s.node);
                }
            }
            for _ in &sent {
                let u: Update = next(&mut updates).await;
                got_updates
                    .entry((u.epoch, u.round))
                    .or_default()
                    .push((u.origin, u.seq, u.vector));
            }
            if sent.is_empty() {
                break;
            }
            sent.sort_unstable();
            senders = sent;
        }
        let want = &expected[k];
        let sides: Vec<Side> = sides.into_iter().map(|s| s.expect("a decision")).collect();
        assert_eq!(sides, want.sides, "decisions at the end of epoch {k}");
        assert!(sides.iter().all(|&s| s == truth[k]), "oracle at epoch {k}");
        for (r, msgs) in want.rounds.iter().enumerate() {
            let mut got = got_updates.remove(&(k64, r as u32)).unwrap_or_default();
            got.sort();
            assert_eq!(&got, msgs, "updates of epoch {k} round {r}");
        }
        assert!(got_updates.is_empty(), "extra updates: {got_updates:?}");
    }
    let total: usize = expected.iter().flat_map(|e| &e.rounds).map(Vec::len).sum();
    let triggered: usize = expected
        .iter()
        .flat_map(|e| e.rounds.iter().skip(1))
        .map(Vec::len)
        .sum();
    eprintln!(
        "{}{}: {epochs} epochs, {total} updates ({triggered} triggered), {} crossings",
        zone.name(),
        if predict { " predicting" } else { "" },
        oracle::crossings(&truth).len()
    );
    assert!(
        total > 2 * N,
        "the replay has updates beyond the first readings"
    );
    assert!(
        !oracle::crossings(&truth).is_empty(),
        "the window holds a crossing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_six_processes_decide_as_the_simulator_message_for_message() {
    // one fleet after the other: 26 processes at a time
    replay(Zone::Convex, 60, false).await;
    replay(Zone::Ball, 60, false).await;
    replay(Zone::Convex, 60, true).await;
    replay(Zone::Band, 60, true).await;
}

/// Without lock step the monitors act on each record as it comes; an alarm is a record on
/// every node's own broker, which rules and bridges can take from there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn free_running_monitors_raise_alarms_as_records() {
    let dir = tempfile::tempdir().unwrap();
    let (_fleet, addrs) = start_fleet(dir.path(), 3, Zone::Convex, false, &|_| String::new());
    let mut clients = Vec::new();
    for a in &addrs {
        clients.push(connect(a).await);
    }
    variance_crosses_and_returns(&clients).await;
}

/// Once every monitor of `clients`' nodes says it is ready: readings of variance 0, then
/// 8/3 C^2 (above 2), then 0 again, and every node's latest alarm of each epoch must say
/// the true side.
async fn variance_crosses_and_returns(clients: &[Client]) {
    let n = clients.len();
    let mut ready = gather(clients, "gm/lab/ready").await;
    await_ready(&mut ready, n).await;
    let mut alarms = gather(clients, "gm/lab/alarm").await;
    for (epoch, temps, side) in [
        (0, [20.0, 20.0, 20.0], Side::Below),
        (1, [18.0, 20.0, 22.0], Side::Above),
        (2, [20.0, 20.0, 20.0], Side::Below),
    ] {
        for (c, t) in clients.iter().zip(temps) {
            let r = Reading {
                epoch,
                temperature: t,
                humidity: 35.0,
            };
            c.publish("gm/lab/reading", json(&r)).await.unwrap();
        }
        let mut latest = std::collections::HashMap::new();
        while !(latest.len() == n && latest.values().all(|&s| s == side)) {
            let a: Alarm = next(&mut alarms).await;
            if a.epoch == epoch {
                latest.insert(a.node, a.side);
            }
        }
    }
}

/// Brokers that want a login (`[auth]`, no anonymous clients) and peers that are TLS
/// listeners requiring a client certificate: with `[gm]` username, password, cafile,
/// certfile and keyfile the monitors reach each other and decide; a monitor with a wrong
/// password says in its log that its peers refuse it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitors_log_in_to_their_peers_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(&dir.path().join("pki"), pki::Kind::Ec, "GM CA", "gm");
    let passwd = dir.path().join("passwd");
    let made = Command::new(env!("CARGO_BIN_EXE_fogline"))
        .args(["passwd", "-c", "-b"])
        .arg(&passwd)
        .args(["gm", "s3cret"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let (addrs, tls) = (free_addrs(3), free_addrs(3));
    let config = |i: usize, password: &str| {
        format!(
            "username = \"gm\"\npassword = \"{password}\"\ncafile = {ca:?}\ncertfile = {cc:?}\n\
             keyfile = {ck:?}\n[native]\ntls_listen = [\"{}\"]\n[native.tls]\ncafile = {ca:?}\n\
             certfile = {sc:?}\nkeyfile = {sk:?}\nrequire_certificate = true\n[auth]\n\
             password_file = {passwd:?}\nallow_anonymous = false\n",
            tls[i],
            ca = p.ca,
            cc = p.client_cert,
            ck = p.client_key,
            sc = p.server_cert,
            sk = p.server_key,
        )
    };
    let fleet_dir = dir.path().join("fleet");
    std::fs::create_dir(&fleet_dir).unwrap();
    let _fleet = spawn_fleet(&fleet_dir, &addrs, &tls, Zone::Convex, false, &|i| {
        config(i, "s3cret")
    });
    let login = ClientOptions {
        username: Some("gm".into()),
        password: Some("s3cret".into()),
        ..ClientOptions::default()
    };
    let mut clients = Vec::new();
    for a in &addrs {
        clients.push(connect_with(a, login.clone()).await);
    }
    variance_crosses_and_returns(&clients).await;

    // Node 0 again, in a process of its own, with a wrong password.
    let wrong_dir = dir.path().join("wrong");
    std::fs::create_dir(&wrong_dir).unwrap();
    let (own, own_tls) = (free_addrs(1), free_addrs(1));
    let mut peers = tls.clone();
    peers[0] = own_tls[0].clone();
    let config_wrong = |_| config(0, "wrong").replace(&tls[0], &own_tls[0]);
    let _wrong = spawn_fleet(&wrong_dir, &own, &peers, Zone::Convex, false, &config_wrong);
    let log = wrong_dir.join("node0.log");
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("gm peer refuses this node") {
            assert!(text.contains("BadCredentials"), "{text}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no refusal logged: {text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Three free-running monitors; node 2 loses every update of epoch 0. Then node 0's reading
/// jumps, and its update (epoch 1) tells node 2 what it missed; at its next reading node 2
/// pulls node 1's update from node 0. Returns node 2's sequence numbers at the end.
async fn one_loss(repair: bool) -> Vec<u64> {
    let n = 3;
    let dir = tempfile::tempdir().unwrap();
    let extra = move |i: usize| {
        let mut x = format!("repair = {repair}\n");
        if i == 2 {
            x.push_str("inject_loss = 1.0\ninject_loss_until = 1\n");
        }
        x
    };
    let (_fleet, addrs) = start_fleet(dir.path(), n, Zone::Convex, false, &extra);
    let mut clients = Vec::new();
    for a in &addrs {
        clients.push(connect(a).await);
    }
    let mut ready = gather(&clients, "gm/lab/ready").await;
    await_ready(&mut ready, n).await;
    let mut statuses = gather(&clients[2..], "gm/lab/status").await;
    let mut last = Vec::new();
    for (epoch, t0) in [(0u64, 20.0), (1, 25.0), (2, 25.0)] {
        for (i, c) in clients.iter().enumerate() {
            let t = if i == 0 { t0 } else { 20.0 };
            let r = Reading {
                epoch,
                temperature: t,
                humidity: 35.0,
            };
            c.publish("gm/lab/reading", json(&r)).await.unwrap();
        }
        // let every update of the epoch (and any repair) land
        while let Ok(Some(b)) =
            tokio::time::timeout(Duration::from_millis(400), statuses.recv()).await
        {
            let s: Status = serde_json::from_slice(&b).unwrap();
            last = s.seqs;
        }
    }
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repair_recovers_a_lost_update_over_the_brokers() {
    assert_eq!(
        one_loss(false).await,
        vec![2, 0, 1],
        "without repair node 1's update stays lost"
    );
    assert_eq!(
        one_loss(true).await,
        vec![2, 1, 1],
        "with repair it is pulled from node 0"
    );
}

/// The coordinator protocol over the brokers: five nodes and a coordinator (six processes);
/// the coordinator's alarms follow the variance across the threshold and back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coordinator_process_raises_the_alarms() {
    let nodes = 5;
    let dir = tempfile::tempdir().unwrap();
    let extra = |_| "protocol = \"coordinator\"\n".to_string();
    let (_fleet, addrs) = start_fleet(dir.path(), nodes + 1, Zone::Convex, false, &extra);
    let mut clients = Vec::new();
    for a in &addrs {
        clients.push(connect(a).await);
    }
    let mut ready = gather(&clients, "gm/lab/ready").await;
    await_ready(&mut ready, nodes + 1).await;
    let mut alarms = gather(&clients[nodes..], "gm/lab/alarm").await;
    for (epoch, temps, side) in [
        (0, [20.0, 20.0, 20.0, 20.0, 20.0], Side::Below),
        (1, [18.0, 19.0, 20.0, 21.0, 22.5], Side::Above),
        (2, [20.0, 20.1, 20.2, 20.0, 20.0], Side::Below),
    ] {
        for (c, t) in clients.iter().zip(temps) {
            let r = Reading {
                epoch,
                temperature: t,
                humidity: 35.0,
            };
            c.publish("gm/lab/reading", json(&r)).await.unwrap();
        }
        loop {
            // (an alarm carries the epoch of the message that settled it, which may be the
            // previous epoch's reply; the sides alternate, so the side is what counts)
            let a: Alarm = next(&mut alarms).await;
            assert_eq!(a.node, nodes, "the coordinator raises it");
            if a.side == side {
                break;
            }
        }
    }
}
