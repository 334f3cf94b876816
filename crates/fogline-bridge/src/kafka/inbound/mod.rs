//! `[[bridge.kafka_in]]`: Kafka topics consumed into fogline, at least once.
//!
//! One task per partition fetches from Kafka and publishes what it got into the broker,
//! acknowledged (stored in every stream that captures the topic, as durable as the stream
//! promises), each record with its origin in headers (`kafka-topic`, `kafka-partition`,
//! `kafka-offset`, `kafka-timestamp`, `kafka-key`). Only then does the partition's position
//! move past them, and every `commit_interval` the positions that moved are committed as the
//! consumer group's offsets (`group`): a committed offset never runs ahead of what is stored.
//!
//! On start the bridge takes, per partition, the larger of the group's committed offset and
//! one past the newest record of that partition the streams already hold (`resume`), so the
//! records stored but not yet committed when fogline stopped (kill -9 included) are not
//! stored again. A publish is never abandoned halfway: failures and shutdown stop the
//! partition tasks (`partition`) between batches.

mod partition;

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use fogline_broker::link::Link;
use fogline_broker::Broker;
use parking_lot::Mutex;
use rskafka::client::partition::{OffsetAt, PartitionClient, UnknownTopicHandling};
use rskafka::client::Client;
use tokio::sync::watch;
use tokio::task::JoinSet;

use partition::{offset_at, Worker};

use super::group::{Group, Offsets};
use super::resume::{newest_stored, Partition};
use super::security::Secure;
use super::{connect, META_TIMEOUT};
use crate::config::Start;
use crate::config_in::KafkaInConfig;
use crate::status::{BridgeStatus, Kind, State};

/// How long the node's shutdown waits for the last commit.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// One partition's progress.
#[derive(Clone, Copy, Debug)]
struct Progress {
    /// The next Kafka offset to read; every record before it is stored in fogline.
    next: i64,
    /// The partition's high watermark at the last fetch.
    high: i64,
    /// Kafka timestamp of the last record stored, microseconds.
    last_us: u64,
}

type Progresses = Arc<Mutex<HashMap<Partition, Progress>>>;

/// Kafka topics consumed into fogline. See the [module docs](self).
pub struct KafkaIn {
    /// TLS and SASL to Kafka.
    secure: Arc<Secure>,
    cfg: Arc<KafkaInConfig>,
    node: String,
    link: Link,
    status: Arc<BridgeStatus>,
    progress: Progresses,
    /// What the group has committed, as far as this bridge knows.
    committed: Offsets,
    /// Whether the streams were read back (once per start).
    resumed: bool,
}

/// Why a session with Kafka ended.
enum End {
    Stopped,
    Failed(String),
}

impl KafkaIn {
    /// The bridge `name` of `cfg`, for `node`.
    ///
    /// # Errors
    /// Its TLS files cannot be loaded.
    pub fn new(
        name: &str,
        cfg: KafkaInConfig,
        node: &str,
        broker: &Broker,
    ) -> Result<Self, String> {
        let target = format!(
            "kafka {} [{}] -> {}",
            cfg.bootstrap.join(","),
            cfg.topics.join(","),
            cfg.topic
        );
        for t in &cfg.topics {
            let ft = cfg.fogline_topic(t);
            if !broker.streams().iter().any(|s| s.captures(&ft)) {
                tracing::warn!(bridge = name, topic = %ft, "no stream captures this topic: records consumed from Kafka reach live subscribers only, and their offsets are committed");
            }
        }
        let secure = Secure::load(&cfg.security, &cfg.bootstrap)
            .map_err(|e| format!("bridge {name:?}: {e}"))?;
        Ok(KafkaIn {
            secure,
            status: BridgeStatus::new(name, Kind::KafkaIn, target),
            cfg: Arc::new(cfg),
            node: node.to_string(),
            link: broker.link(&format!("bridge {name}")),
            progress: Progresses::default(),
            committed: Offsets::new(),
            resumed: false,
        })
    }

    /// Its status, for the API and metrics.
    pub fn status(&self) -> Arc<BridgeStatus> {
        self.status.clone()
    }

    /// Consumes until `stop` turns true, connecting again after every failure.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut wait = Duration::from_millis(100);
        loop {
            match self.session(&mut stop).await {
                End::Stopped => break,
                End::Failed(e) => {
                    tracing::warn!(bridge = %self.status.name, error = %e, "Kafka-in bridge: trying again");
                    self.status.fail(&e);
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.changed() => {}
            }
            if *stop.borrow() {
                break;
            }
            wait = (wait * 2).min(self.cfg.retry_max);
        }
        self.status.set_state(State::Stopped);
    }

    fn group(&self) -> Group {
        let id = format!("fogline-{}-{}", self.node, self.status.name);
        Group::new(
            &self.cfg.bootstrap,
            &self.cfg.group,
            &id,
            META_TIMEOUT,
            self.secure.clone(),
        )
    }

    /// One connection's worth of consuming.
    async fn session(&mut self, stop: &mut watch::Receiver<bool>) -> End {
        self.status.set_state(State::Connecting);
        let id = format!("fogline-{}-{}", self.node, self.status.name);
        let setup = async {
            let client = connect(&self.cfg.bootstrap, &id, &self.secure).await?;
            let parts = self.partitions(&client).await?;
            let mut group = self.group();
            self.place(&parts, &mut group).await?;
            Ok::<_, String>((parts, group))
        };
        let (parts, mut group) = tokio::select! {
            r = setup => match r {
                Ok(x) => x,
                Err(e) => return End::Failed(e),
            },
            _ = stop.changed() => return End::Stopped,
        };
        self.status.set_state(State::Running);
        let (halt_tx, halt) = watch::channel(false);
        let mut tasks = JoinSet::new();
        for (key, pc) in parts {
            let worker = Worker {
                ftopic: self.cfg.fogline_topic(&key.0),
                key,
                pc,
                cfg: self.cfg.clone(),
                link: self.link.clone(),
                status: self.status.clone(),
                progress: self.progress.clone(),
            };
            tasks.spawn(worker.run(halt.clone()));
        }
        let every = self.cfg.commit_interval;
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        let end = loop {
            tokio::select! {
                _ = tick.tick() => {
                    self.refresh_lag();
                    // A stop need not wait for a coordinator that does not answer: the
                    // exchange is dropped with its connection, and the final commit below
                    // is bounded.
                    tokio::select! {
                        r = self.commit(&mut group) => if let Err(e) = r {
                            break End::Failed(e);
                        },
                        _ = stop.changed() => break End::Stopped,
                    }
                }
                done = tasks.join_next() => match done {
                    Some(Ok(Err(e))) => break End::Failed(e),
                    Some(Err(e)) => break End::Failed(format!("a partition task ended: {e}")),
                    // A task only ends without an error when halted.
                    Some(Ok(Ok(()))) | None => break End::Failed("partition tasks ended".into()),
                },
                _ = stop.changed() => break End::Stopped,
            }
        };
        // Between batches, never within a publish: what each task stored is in `progress`.
        let _ = halt_tx.send(true);
        while let Some(done) = tasks.join_next().await {
            if let Ok(Err(e)) = done {
                tracing::debug!(bridge = %self.status.name, error = %e, "partition task");
            }
        }
        match tokio::time::timeout(STOP_GRACE, self.commit(&mut group)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(bridge = %self.status.name, error = %e, "last commit failed: the records stored since the last commit are found in the streams at the next start")
            }
            Err(_) => {
                tracing::warn!(bridge = %self.status.name, "last commit timed out: the records stored since the last commit are found in the streams at the next start")
            }
        }
        self.refresh_lag();
        end
    }

    /// A client of every partition of the configured topics.
    async fn partitions(
        &self,
        client: &Client,
    ) -> Result<Vec<(Partition, Arc<PartitionClient>)>, String> {
        let listed = tokio::time::timeout(META_TIMEOUT, client.list_topics())
            .await
            .map_err(|_| "no answer to a metadata request".to_string())?
            .map_err(|e| format!("listing Kafka topics: {e}"))?;
        let mut out = Vec::new();
        for t in &self.cfg.topics {
            let count = listed
                .iter()
                .find(|l| &l.name == t)
                .map_or(0, |l| l.partitions.len());
            if count == 0 {
                return Err(format!("Kafka topic {t:?} does not exist"));
            }
            for p in 0..count as i32 {
                let pc = client.partition_client(t.as_str(), p, UnknownTopicHandling::Error);
                let pc = tokio::time::timeout(META_TIMEOUT, pc)
                    .await
                    .map_err(|_| format!("no answer about Kafka topic {t:?} partition {p}"))?
                    .map_err(|e| format!("Kafka topic {t:?} partition {p}: {e}"))?;
                out.push(((t.clone(), p), Arc::new(pc)));
            }
        }
        Ok(out)
    }

    /// Sets where each partition resumes: the larger of the group's committed offset and
    /// one past the newest record the streams hold (read back once per start), else as
    /// `start` says.
    async fn place(
        &mut self,
        parts: &[(Partition, Arc<PartitionClient>)],
        group: &mut Group,
    ) -> Result<(), String> {
        let mut by_topic: Vec<(String, Vec<i32>)> = Vec::new();
        for ((t, p), _) in parts {
            match by_topic.iter_mut().find(|(bt, _)| bt == t) {
                Some((_, ps)) => ps.push(*p),
                None => by_topic.push((t.clone(), vec![*p])),
            }
        }
        self.committed = group.fetch(&by_topic).await?;
        if !self.resumed {
            let keys: Vec<Partition> = parts.iter().map(|(k, _)| k.clone()).collect();
            let stored = self.read_back(&keys)?;
            let mut progress = self.progress.lock();
            for (key, newest) in stored {
                let committed = self.committed.get(&key).copied().unwrap_or(0);
                let skipped = (newest + 1 - committed).max(0) as u64;
                self.status.skipped.fetch_add(skipped, Relaxed);
                if skipped > 0 {
                    tracing::info!(bridge = %self.status.name, topic = %key.0, partition = key.1, committed, stored = newest, "resuming after records stored but not committed");
                }
                let next = newest + 1;
                progress.insert(
                    key,
                    Progress {
                        next,
                        high: next,
                        last_us: 0,
                    },
                );
            }
            drop(progress);
            self.resumed = true;
        }
        for (key, pc) in parts {
            let known = self.progress.lock().get(key).map(|p| p.next);
            let committed = self.committed.get(key).copied();
            let next = match known.max(committed) {
                Some(n) => n,
                None => {
                    let at = match self.cfg.start {
                        Start::Earliest => OffsetAt::Earliest,
                        Start::Latest => OffsetAt::Latest,
                    };
                    offset_at(pc, at).await?
                }
            };
            let mut progress = self.progress.lock();
            let e = progress.entry(key.clone()).or_insert(Progress {
                next,
                high: next,
                last_us: 0,
            });
            e.next = next;
        }
        Ok(())
    }

    /// The newest stored offset of each partition, over every stream that captures its
    /// fogline topic.
    fn read_back(&self, keys: &[Partition]) -> Result<HashMap<Partition, i64>, String> {
        let mut out: HashMap<Partition, i64> = HashMap::new();
        for stream in self.link.broker().streams().iter() {
            let mine: Vec<Partition> = keys
                .iter()
                .filter(|(t, _)| stream.captures(&self.cfg.fogline_topic(t)))
                .cloned()
                .collect();
            if mine.is_empty() {
                continue;
            }
            for (k, o) in newest_stored(stream, &mine, |t| self.cfg.fogline_topic(t))? {
                let e = out.entry(k).or_insert(o);
                *e = (*e).max(o);
            }
        }
        Ok(out)
    }

    /// Commits the positions that moved since the last commit.
    async fn commit(&mut self, group: &mut Group) -> Result<(), String> {
        let moved: Offsets = self
            .progress
            .lock()
            .iter()
            .filter(|(k, p)| self.committed.get(*k) != Some(&p.next))
            .map(|(k, p)| (k.clone(), p.next))
            .collect();
        if moved.is_empty() {
            return Ok(());
        }
        group.commit(&moved).await?;
        self.committed.extend(moved);
        Ok(())
    }

    /// The lag: records Kafka holds past each partition's position, summed.
    fn refresh_lag(&self) {
        let progress = self.progress.lock();
        let mut records = 0u64;
        let mut oldest = 0u64;
        for p in progress.values() {
            let behind = (p.high - p.next).max(0) as u64;
            records += behind;
            if behind > 0 && p.last_us > 0 {
                oldest = if oldest == 0 {
                    p.last_us
                } else {
                    oldest.min(p.last_us)
                };
            }
        }
        self.status.set_lag(records, oldest);
    }
}
