//! A real single-node Kafka (KRaft) for the bridge tests, from the jars
//! `bench/peers/install.sh kafka` installs, started by `bench/peers/start.sh` and stopped,
//! killed and started again (keeping its data) by process id here. `kcat` reads it back as
//! an independent client.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A Kafka process and its folder.
pub struct Kafka {
    dir: PathBuf,
    /// Its `host:port`.
    pub bootstrap: String,
    port: u16,
}

/// Two consecutive free ports (Kafka's listener and its controller's).
fn free_ports() -> u16 {
    for _ in 0..100 {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        if port < 65000 && std::net::TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            return port;
        }
    }
    panic!("no two free ports");
}

/// Whether a missing peer fails the test (`scripts/test.sh` sets the variable) or skips it.
pub fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

impl Kafka {
    /// Starts a fresh Kafka keeping its data in `dir`; `None` (the test skips) when Kafka is
    /// not installed, unless `FOGLINE_TEST_KAFKA=1`, where that fails the test.
    pub fn start(dir: &Path) -> Option<Kafka> {
        let port = free_ports();
        let out = Command::new(repo().join("bench/peers/start.sh"))
            .args([
                "kafka",
                dir.to_str().unwrap(),
                &port.to_string(),
                "persistent",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .expect("start.sh runs");
        if out.status.code() == Some(3) {
            let why = String::from_utf8_lossy(&out.stderr);
            assert!(
                !required("FOGLINE_TEST_KAFKA"),
                "Kafka is required here: {why}"
            );
            eprintln!("skipped: {why}");
            return None;
        }
        assert!(
            out.status.success(),
            "Kafka did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(Kafka {
            dir: dir.to_path_buf(),
            bootstrap: format!("127.0.0.1:{port}"),
            port,
        })
    }

    /// [`Kafka::start`], then a second listener, SASL_SSL on `127.0.0.1` (advertised as
    /// `localhost`, the name `server_cert` is for): TLS with the server certificate and key
    /// given (PEM; the key is converted to the PKCS#8 Kafka reads), client certificates
    /// signed by `ca` required, and SASL PLAIN and SCRAM-SHA-256 with the user `user`.
    /// The first listener stays plain, for the checks. Returns the secure `host:port` too.
    pub fn start_secure(
        dir: &Path,
        ca: &Path,
        server_cert: &Path,
        server_key: &Path,
        (user, password): (&str, &str),
    ) -> Option<(Kafka, String)> {
        let kafka = Kafka::start(dir)?;
        kafka.stop();
        let secure = free_ports() + 1;
        let key = dir.join("server.pk8");
        let out = Command::new("openssl")
            .args(["pkcs8", "-topk8", "-nocrypt", "-in"])
            .arg(server_key)
            .arg("-out")
            .arg(&key)
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let keystore = dir.join("keystore.pem");
        let pem =
            std::fs::read_to_string(&key).unwrap() + &std::fs::read_to_string(server_cert).unwrap();
        std::fs::write(&keystore, pem).unwrap();
        let props = dir.join("server.properties");
        let port = kafka.port;
        let text = std::fs::read_to_string(&props)
            .unwrap()
            .replace(
                &format!("listeners=PLAINTEXT://127.0.0.1:{port},"),
                &format!("listeners=PLAINTEXT://127.0.0.1:{port},SASL_SSL://127.0.0.1:{secure},"),
            )
            .replace(
                &format!("advertised.listeners=PLAINTEXT://127.0.0.1:{port}"),
                &format!(
                    "advertised.listeners=PLAINTEXT://127.0.0.1:{port},SASL_SSL://localhost:{secure}"
                ),
            )
            .replace(
                "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,",
                "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,",
            )
            + &format!(
                "inter.broker.listener.name=PLAINTEXT\n\
                 sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256\n\
                 listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_{user}=\"{password}\";\n\
                 listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n\
                 ssl.keystore.type=PEM\nssl.keystore.location={}\n\
                 ssl.truststore.type=PEM\nssl.truststore.location={}\n\
                 ssl.client.auth=required\n",
                keystore.display(),
                ca.display()
            );
        std::fs::write(&props, text).unwrap();
        kafka.restart();
        let deadline = Instant::now() + Duration::from_secs(120);
        while std::net::TcpStream::connect(("127.0.0.1", secure)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the SASL_SSL listener did not open"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        // SCRAM users live in Kafka's metadata, set through the plain listener.
        let libs = repo().join("bench/peers/.install/kafka/libs");
        let out = Command::new("java")
            .arg("-cp")
            .arg(format!("{}/*", libs.display()))
            .args([
                "kafka.admin.ConfigCommand",
                "--bootstrap-server",
                &kafka.bootstrap,
            ])
            .args(["--alter", "--entity-type", "users", "--entity-name", user])
            .arg("--add-config")
            .arg(format!(
                "SCRAM-SHA-256=[iterations=4096,password={password}]"
            ))
            .output()
            .expect("java runs");
        assert!(
            out.status.success(),
            "adding the SCRAM user: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some((kafka, format!("localhost:{secure}")))
    }

    fn pid(&self) -> Option<i32> {
        std::fs::read_to_string(self.dir.join("pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    fn signal(&self, sig: &str) {
        if let Some(pid) = self.pid() {
            let _ = Command::new("kill").args([sig, &pid.to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(60);
            while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
                // Reap it if it is our child (it is start.sh's, so mostly not).
                std::thread::sleep(Duration::from_millis(100));
                if std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|s| s.contains(") Z "))
                {
                    break;
                }
            }
            let _ = std::fs::remove_file(self.dir.join("pid"));
        }
    }

    /// Stops it cleanly (SIGTERM), keeping its data.
    pub fn stop(&self) {
        self.signal("-TERM");
    }

    /// Kills it (SIGKILL), keeping its data.
    pub fn kill(&self) {
        self.signal("-KILL");
    }

    /// Starts it again on its data and waits until it listens.
    pub fn restart(&self) {
        let libs = repo().join("bench/peers/.install/kafka/libs");
        let log = std::fs::File::create(self.dir.join("log.again")).unwrap();
        let child = Command::new("java")
            .args(["-Xms512m", "-Xmx512m"])
            .arg(format!(
                "-Dlog4j.configuration=file:{}",
                self.dir.join("log4j.properties").display()
            ))
            .arg("-cp")
            .arg(format!("{}/*", libs.display()))
            .arg("kafka.Kafka")
            .arg(self.dir.join("server.properties"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("java runs");
        std::fs::write(self.dir.join("pid"), child.id().to_string()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "Kafka did not come back");
            std::thread::sleep(Duration::from_millis(100));
        }
        // The child is reaped by nobody else: leave it to init when the test ends.
        std::mem::forget(child);
    }

    /// Every record of `topic` (all partitions), read by kcat from the beginning to the
    /// end: `(partition, key, headers, payload)`, per partition in offset order.
    pub fn read_all(&self, topic: &str) -> Vec<(i32, String, String, String)> {
        let out = Command::new("kcat")
            .args([
                "-C",
                "-b",
                &self.bootstrap,
                "-t",
                topic,
                "-o",
                "beginning",
                "-e",
                "-q",
            ])
            .args(["-f", "%p\t%k\t%h\t%s\n"])
            .output()
            .expect("kcat runs (apt package kcat)");
        assert!(
            out.status.success(),
            "kcat: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let mut f = l.splitn(4, '\t');
                let mut next = || f.next().unwrap_or_default().to_string();
                (next().parse().unwrap(), next(), next(), next())
            })
            .collect()
    }

    /// Produces `key\tvalue` lines with kcat, partitioned as Kafka's Java producer does
    /// (librdkafka's `murmur2_random`).
    pub fn produce_keyed(&self, topic: &str, lines: &str) {
        let mut child = Command::new("kcat")
            .args(["-P", "-b", &self.bootstrap, "-t", topic, "-K", "\t"])
            .args(["-X", "topic.partitioner=murmur2_random"])
            .stdin(Stdio::piped())
            .spawn()
            .expect("kcat runs");
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(lines.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
    }
}

impl Drop for Kafka {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(self.dir.join("data"));
    }
}

/// A network partition between Kafka's client port and everyone on this machine: nftables
/// drops every TCP packet to or from the port (both directions pass the output hook on the
/// loopback interface), until dropped.
pub struct Partition {
    table: String,
}

impl Partition {
    /// Cuts `port` off; `None` when this machine cannot (no nft, not root), unless
    /// `FOGLINE_TEST_NETFAULT=1`, where that fails the test.
    pub fn cut(port: u16) -> Option<Partition> {
        let table = format!("fogline_test_{}_{port}", std::process::id());
        let nft = |args: &str| {
            Command::new("nft")
                .args(args.split(' '))
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        };
        let ok = nft(&format!("add table inet {table}"))
            && nft(&format!(
                "add chain inet {table} out {{ type filter hook output priority 0 ; }}"
            ))
            && nft(&format!("add rule inet {table} out tcp dport {port} drop"))
            && nft(&format!("add rule inet {table} out tcp sport {port} drop"));
        if !ok {
            let _ = nft(&format!("delete table inet {table}"));
            assert!(
                !required("FOGLINE_TEST_NETFAULT"),
                "nftables is required here and refused the rules"
            );
            eprintln!("skipped: cannot add nftables rules here (needs nft and root)");
            return None;
        }
        Some(Partition { table })
    }
}

impl Drop for Partition {
    fn drop(&mut self) {
        let _ = Command::new("nft")
            .args(["delete", "table", "inet", &self.table])
            .status();
    }
}

impl Kafka {
    /// Its client port.
    pub fn port(&self) -> u16 {
        self.port
    }

    async fn client(&self) -> rskafka::client::Client {
        rskafka::client::ClientBuilder::new(vec![self.bootstrap.clone()])
            .build()
            .await
            .expect("Kafka answers")
    }

    /// Creates `topic` with `partitions` partitions.
    pub async fn create_topic(&self, topic: &str, partitions: i32) {
        let client = self.client().await;
        client
            .controller_client()
            .unwrap()
            .create_topic(topic, partitions, 1, 10_000)
            .await
            .unwrap_or_else(|e| panic!("creating {topic}: {e}"));
    }

    /// Produces `records` to partition `partition` of `topic`, in order, 100 a request.
    pub async fn produce(
        &self,
        topic: &str,
        partition: i32,
        records: Vec<rskafka::record::Record>,
    ) {
        use rskafka::client::partition::{Compression, UnknownTopicHandling};
        let client = self.client().await;
        let pc = client
            .partition_client(topic, partition, UnknownTopicHandling::Retry)
            .await
            .unwrap();
        let mut records = records.into_iter().peekable();
        while records.peek().is_some() {
            let chunk: Vec<_> = records.by_ref().take(100).collect();
            pc.produce(chunk, Compression::NoCompression)
                .await
                .unwrap_or_else(|e| panic!("producing to {topic}/{partition}: {e}"));
        }
    }

    /// The offsets `group` committed for `topic`, per partition, as Kafka's
    /// `kafka-consumer-groups` tool describes them.
    pub fn committed(&self, group: &str, topic: &str) -> std::collections::HashMap<i32, i64> {
        let libs = repo().join("bench/peers/.install/kafka/libs/*");
        let out = Command::new("java")
            .args(["-cp", libs.to_str().unwrap()])
            .arg("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand")
            .args(["--bootstrap-server", &self.bootstrap])
            .args(["--describe", "--group", group])
            .output()
            .expect("java runs");
        // GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|w| w.len() >= 6 && w[0] == group && w[1] == topic)
            .filter_map(|w| Some((w[2].parse().ok()?, w[3].parse().ok()?)))
            .collect()
    }
}
