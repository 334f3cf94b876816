//! `[[bridge.kafka]]`: a stream forwarded to Kafka, each record once and in order.
//!
//! The records wait in the stream, not in the bridge: the bridge reads a batch at its
//! position, sends each partition's share in one produce request (`acks=all`), and moves on
//! when Kafka acknowledged all of them. Each Kafka record carries its origin (node, stream,
//! offset) in headers. After any failure (Kafka down, a lost answer, a restart of fogline,
//! kill -9 included) the bridge connects again and, before it sends anything to a partition,
//! reads back the newest record of ours the partition holds (`tail`); records up to it are
//! skipped. The position saved in `<data_dir>/.bridge/<name>.pos` only shortens that replay.
//!
//! A produce request is never abandoned while its connection lives (a copy sent again could
//! be written twice); only the node's shutdown gives up on one after [`STOP_GRACE`].

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fogline_broker::{Broker, RetentionHold, Stream};
use fogline_log::Record as LogRecord;
use rskafka::client::partition::{PartitionClient, UnknownTopicHandling};
use rskafka::client::Client;
use rskafka::record::Record;
use tokio::sync::watch;

use super::security::Secure;
use super::{connect, partition_of, render, tail, META_TIMEOUT};
use super::{ORIGIN_NODE, ORIGIN_OFFSET, ORIGIN_STREAM};
use crate::config::{Compression, KafkaOutConfig, KeyFrom, OnRetention};
use crate::position::Position;
use crate::status::{BridgeStatus, Kind, State};
use crate::stream;

/// How long the node's shutdown waits for a produce request in flight.
pub const STOP_GRACE: Duration = Duration::from_secs(5);
/// How often the saved position is written while records flow.
const SAVE_EVERY: Duration = Duration::from_secs(1);
/// Kafka topics (with their partitions' clients) kept open between batches.
const OPEN_TOPICS: usize = 1024;
/// How often the same failure is logged again.
const LOG_AGAIN: Duration = Duration::from_secs(60);
/// How often the lag is measured while nothing else happens.
const TICK: Duration = Duration::from_millis(500);

/// A partition's share of a batch: Kafka topic, partition, records, the stream offset of
/// the last, payload bytes, request bytes.
type Group = (String, usize, Vec<Record>, u64, u64, usize);

/// An upper bound of a record's bytes in a produce request (record batch v2: a record's
/// lengths and deltas are varints of at most 5 or 10 bytes).
fn encoded_size(r: &Record) -> usize {
    let key = r.key.as_ref().map_or(0, Vec::len);
    let value = r.value.as_ref().map_or(0, Vec::len);
    let headers: usize = r.headers.iter().map(|(k, v)| k.len() + v.len() + 10).sum();
    key + value + headers + 40
}

/// Kafka refused the request as too large.
fn too_large(e: &rskafka::client::error::Error) -> bool {
    use rskafka::client::error::{Error, ProtocolError};
    matches!(
        e,
        Error::ServerError {
            protocol_error: ProtocolError::MessageTooLarge | ProtocolError::RecordListTooLarge,
            ..
        }
    )
}

/// `ask`, a request that writes nothing, given up when `stop` turns true first: an
/// unreachable Kafka answers nothing until [`META_TIMEOUT`], and shutdown must not wait.
async fn unless_stopped<T>(
    stop: &mut watch::Receiver<bool>,
    ask: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, End> {
    tokio::select! {
        r = ask => r.map_err(End::Failed),
        _ = stop.changed() => Err(End::Stopped),
    }
}

/// One Kafka partition as the bridge sees it.
struct Part {
    client: Arc<PartitionClient>,
    /// The newest stream offset of ours in the partition; `None` until read back.
    last: Option<Option<u64>>,
}

/// A stream forwarded to Kafka. See the [module docs](self).
pub struct KafkaOut {
    cfg: KafkaOutConfig,
    /// TLS and SASL to Kafka.
    secure: Arc<Secure>,
    node: String,
    broker: Broker,
    status: Arc<BridgeStatus>,
    position: Position,
    /// The next stream offset to forward; everything before it is in Kafka or filtered out.
    cursor: u64,
    /// `on_retention = "hold"`: the stream keeps everything from `cursor` on.
    hold: Option<RetentionHold>,
}

/// Why a session with Kafka ended.
enum End {
    Stopped,
    Failed(String),
}

impl KafkaOut {
    /// The bridge `name` of `cfg`, for `node`, resuming from its saved position in `dir`
    /// (none: a node that keeps no files starts as configured each time).
    ///
    /// # Errors
    /// The stream does not exist, the saved position cannot be read, or the TLS files
    /// cannot be loaded.
    pub fn new(
        name: &str,
        cfg: KafkaOutConfig,
        node: &str,
        broker: Broker,
        dir: Option<PathBuf>,
    ) -> Result<Self, String> {
        let stream = broker.stream(&cfg.stream).ok_or_else(|| {
            format!(
                "bridge {name:?}: stream {:?} does not exist (create it in [broker] streams)",
                cfg.stream
            )
        })?;
        let target = format!(
            "kafka {} -> {}",
            cfg.bootstrap.join(","),
            cfg.topic.replace("{topic}", "<topic>")
        );
        let status = BridgeStatus::new(name, Kind::KafkaOut, target);
        let secure = Secure::load(&cfg.security, &cfg.bootstrap)
            .map_err(|e| format!("bridge {name:?}: {e}"))?;
        let mut position = Position::new(dir.map(|d| d.join(format!("{name}.pos"))));
        let cursor = position
            .resume(&cfg.stream, cfg.start, stream.bounds())
            .map_err(|e| format!("bridge {name:?}: {e}"))?;
        let hold = (cfg.on_retention == OnRetention::Hold).then(|| {
            let hold = stream.hold_retention(name);
            hold.set(cursor);
            hold
        });
        Ok(KafkaOut {
            cfg,
            secure,
            node: node.to_string(),
            broker,
            status,
            position,
            cursor,
            hold,
        })
    }

    /// Its status, for the API and metrics.
    pub fn status(&self) -> Arc<BridgeStatus> {
        self.status.clone()
    }

    /// Forwards until `stop` turns true, connecting again after every failure.
    pub async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut wait = Duration::from_millis(100);
        // The last failure logged and when: the same one is logged again once a minute.
        let mut logged: Option<(String, Instant)> = None;
        loop {
            let carried = self.status.records.load(Relaxed);
            match self.session(&mut stop).await {
                End::Stopped => break,
                End::Failed(e) => {
                    let again = logged
                        .as_ref()
                        .is_some_and(|(last, at)| *last == e && at.elapsed() < LOG_AGAIN);
                    if !again {
                        tracing::warn!(bridge = %self.status.name, error = %e, "Kafka bridge: records wait in the stream; trying again");
                        logged = Some((e.clone(), Instant::now()));
                    }
                    self.status.fail(&e);
                }
            }
            if self.status.records.load(Relaxed) > carried {
                // It forwarded something before failing: the link works, start over quick.
                wait = Duration::from_millis(100);
                logged = None;
            }
            let until = Instant::now() + wait;
            while Instant::now() < until {
                // Retention goes on while Kafka is down: a drop is counted when it happens.
                if let Ok(stream) = self.stream() {
                    self.follow_retention(&stream);
                    stream::refresh_lag(&stream, self.cursor, &self.status);
                }
                tokio::select! {
                    _ = tokio::time::sleep(TICK.min(until - Instant::now())) => {}
                    _ = stop.changed() => {}
                }
                if *stop.borrow() {
                    break;
                }
            }
            if *stop.borrow() {
                break;
            }
            wait = (wait * 2).min(self.cfg.retry_max);
        }
        if let Err(e) = self.position.save(&self.cfg.stream, self.cursor) {
            tracing::warn!(bridge = %self.status.name, error = %e, "cannot save the bridge's position");
        }
        self.status.set_state(State::Stopped);
    }

    fn stream(&self) -> Result<Arc<Stream>, String> {
        self.broker
            .stream(&self.cfg.stream)
            .ok_or_else(|| format!("stream {:?} was deleted", self.cfg.stream))
    }

    /// One connection's worth of forwarding.
    async fn session(&mut self, stop: &mut watch::Receiver<bool>) -> End {
        // A bridge that failed stays `down` until it connects again.
        if self.status.state() != State::Down {
            self.status.set_state(State::Connecting);
        }
        let id = format!("fogline-{}-{}", self.node, self.status.name);
        let client = tokio::select! {
            c = connect(&self.cfg.bootstrap, &id, &self.secure) => match c {
                Ok(c) => c,
                Err(e) => return End::Failed(e),
            },
            _ = stop.changed() => return End::Stopped,
        };
        let mut topics: HashMap<String, Vec<Part>> = HashMap::new();
        if self.status.state() == State::Down {
            tracing::info!(bridge = %self.status.name, "Kafka bridge: connected again, forwarding");
        }
        self.status.set_state(State::Running);
        let mut saved_at = Instant::now();
        loop {
            if *stop.borrow() {
                return End::Stopped;
            }
            let stream = match self.stream() {
                Ok(s) => s,
                Err(e) => return End::Failed(e),
            };
            self.follow_retention(&stream);
            let (_, next) = stream.bounds();
            if self.cursor >= next {
                self.status.set_lag(0, 0);
                if saved_at.elapsed() >= SAVE_EVERY {
                    self.save();
                    saved_at = Instant::now();
                }
                tokio::select! {
                    _ = stream.wait_past(self.cursor) => {}
                    _ = stop.changed() => {}
                    _ = tokio::time::sleep(TICK) => {}
                }
                continue;
            }
            let batch = match stream.read(
                self.cursor,
                self.cfg.batch_records,
                self.cfg.batch_bytes.as_u64() as usize,
            ) {
                Ok(b) => b,
                Err(e) => return End::Failed(format!("reading the stream: {e}")),
            };
            let Some(last) = batch.last() else {
                // Retention moved past the cursor between bounds and read.
                continue;
            };
            let after = last.offset + 1;
            self.status
                .set_lag(next.saturating_sub(self.cursor), batch[0].timestamp);
            match self.forward(&client, &mut topics, &batch, stop).await {
                Ok(stopped_at) => self.advance(stopped_at.unwrap_or(after)),
                Err(e) => return e,
            }
            if saved_at.elapsed() >= SAVE_EVERY {
                self.save();
                saved_at = Instant::now();
            }
        }
    }

    /// Sends one batch read from the stream: each partition's share in one request, after
    /// skipping what the partition already holds. A share stops before the record that
    /// would take its request past `batch_bytes` (Kafka refuses a batch above the topic's
    /// `max.message.bytes`, 1 MiB by default): then the offset of that record, where the
    /// next batch starts.
    async fn forward(
        &mut self,
        client: &Client,
        topics: &mut HashMap<String, Vec<Part>>,
        batch: &[LogRecord],
        stop: &mut watch::Receiver<bool>,
    ) -> Result<Option<u64>, End> {
        let limit = self.cfg.batch_bytes.as_u64() as usize;
        let mut stopped_at = None;
        // (topic, partition) -> records and the stream offset of the last one, in order of
        // first appearance.
        // (Kafka topic, partition, records, last stream offset, payload bytes, request bytes)
        let mut groups: Vec<Group> = Vec::new();
        let mut group_of: HashMap<(String, usize), usize> = HashMap::new();
        let mut skipped = 0u64;
        if topics.len() > OPEN_TOPICS {
            // One Kafka topic per device topic has no bound: forget them all (each partition
            // is read back again before its next send, so nothing is sent twice).
            topics.clear();
        }
        for r in batch {
            let Ok(topic) = std::str::from_utf8(&r.topic) else {
                continue;
            };
            if let Some(f) = &self.cfg.filter {
                if !fogline_wire::filter_matches(f, topic) {
                    continue;
                }
            }
            let ktopic = render(
                &self.cfg.topic,
                topic,
                &self.cfg.stream,
                &self.cfg.topic_separator,
            );
            if !topics.contains_key(&ktopic) {
                let parts = unless_stopped(stop, self.open_topic(client, &ktopic)).await?;
                topics.insert(ktopic.clone(), parts);
            }
            let parts = topics.get_mut(&ktopic).expect("inserted above");
            let key = self.key_of(topic, r);
            let p = match &key {
                Some(k) => partition_of(k, parts.len()),
                None => partition_of(topic.as_bytes(), parts.len()),
            };
            let part = &mut parts[p];
            if part.last.is_none() {
                let read =
                    tail::last_origin(&part.client, &self.node, &self.cfg.stream, META_TIMEOUT);
                let read = async {
                    read.await
                        .map_err(|e| format!("reading back {ktopic}/{p}: {e}"))
                };
                let found = unless_stopped(stop, read).await?;
                part.last = Some(found.filter(|&o| {
                    let (_, next) = self.stream().map_or((0, 0), |s| s.bounds());
                    if o >= next {
                        tracing::warn!(bridge = %self.status.name, topic = %ktopic, partition = p, offset = o, "Kafka holds an offset this stream has not reached (was the stream recreated?): it is not taken as forwarded");
                    }
                    o < next
                }));
            }
            if part.last.flatten().is_some_and(|l| r.offset <= l) {
                skipped += 1;
                continue;
            }
            let rec = self.to_kafka(topic, r, key);
            let size = encoded_size(&rec);
            let bytes = r.payload.len() as u64;
            match group_of.get(&(ktopic.clone(), p)).map(|&i| &mut groups[i]) {
                Some(g) if g.5 + size > limit => {
                    stopped_at = Some(r.offset);
                    break;
                }
                Some(g) => {
                    g.2.push(rec);
                    g.3 = r.offset;
                    g.4 += bytes;
                    g.5 += size;
                }
                None => {
                    group_of.insert((ktopic.clone(), p), groups.len());
                    groups.push((ktopic, p, vec![rec], r.offset, bytes, size));
                }
            }
        }
        if skipped > 0 {
            self.status.skipped.fetch_add(skipped, Relaxed);
        }
        for (ktopic, p, records, last, bytes, _) in groups {
            let n = records.len() as u64;
            let part = &mut topics.get_mut(&ktopic).expect("opened above")[p];
            let produce = part.client.produce(records, self.compression());
            tokio::pin!(produce);
            let done = tokio::select! {
                r = &mut produce => r,
                _ = stop.changed() => {
                    match tokio::time::timeout(STOP_GRACE, &mut produce).await {
                        Ok(r) => r,
                        Err(_) => {
                            tracing::warn!(bridge = %self.status.name, "shutdown gave up on a produce request in flight: Kafka may hold its records once more after the restart if it writes them late");
                            return Err(End::Stopped);
                        }
                    }
                }
            };
            match done {
                Ok(_) => {
                    part.last = Some(Some(last));
                    self.status.carried(n, bytes);
                }
                Err(e) if n == 1 && too_large(&e) => {
                    // It will never fit: dropped, loudly, rather than stopping the bridge.
                    self.status.errors.fetch_add(1, Relaxed);
                    self.status.dropped.fetch_add(1, Relaxed);
                    tracing::error!(bridge = %self.status.name, offset = last, topic = %ktopic, error = %e, "a record larger than Kafka accepts was not forwarded (raise the topic's max.message.bytes)");
                }
                Err(e) => {
                    // Written or not: read back before sending again.
                    part.last = None;
                    let hint = if too_large(&e) {
                        " (lower batch_bytes below the topic's max.message.bytes)"
                    } else {
                        ""
                    };
                    return Err(End::Failed(format!("producing to {ktopic}/{p}: {e}{hint}")));
                }
            }
        }
        Ok(stopped_at)
    }

    /// The partitions of `topic`, created first when missing and allowed.
    async fn open_topic(&self, client: &Client, topic: &str) -> Result<Vec<Part>, String> {
        let meta =
            |what: &'static str| move |_| format!("no answer to {what} within {META_TIMEOUT:?}");
        let mut count = self.partition_count(client, topic).await?;
        if count.is_none() {
            if !self.cfg.create_topics {
                return Err(format!(
                    "Kafka topic {topic:?} does not exist (create_topics = false)"
                ));
            }
            let controller = client.controller_client().map_err(|e| e.to_string())?;
            let create =
                controller.create_topic(topic, self.cfg.partitions, self.cfg.replication, 10_000);
            match tokio::time::timeout(META_TIMEOUT, create)
                .await
                .map_err(meta("create-topic"))?
            {
                Ok(()) => {
                    tracing::info!(bridge = %self.status.name, topic, partitions = self.cfg.partitions, "created Kafka topic")
                }
                // Somebody else created it meanwhile.
                Err(e) if e.to_string().contains("TopicAlreadyExists") => {}
                Err(e) => return Err(format!("creating Kafka topic {topic:?}: {e}")),
            }
            let deadline = Instant::now() + META_TIMEOUT;
            while count.is_none() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
                count = self.partition_count(client, topic).await?;
            }
        }
        let count = count.ok_or_else(|| format!("Kafka topic {topic:?} did not appear"))?;
        let mut parts = Vec::with_capacity(count);
        for p in 0..count as i32 {
            let pc = client.partition_client(topic, p, UnknownTopicHandling::Retry);
            let pc = tokio::time::timeout(META_TIMEOUT, pc)
                .await
                .map_err(meta("metadata"))?
                .map_err(|e| format!("Kafka topic {topic:?} partition {p}: {e}"))?;
            parts.push(Part {
                client: Arc::new(pc),
                last: None,
            });
        }
        Ok(parts)
    }

    async fn partition_count(&self, client: &Client, topic: &str) -> Result<Option<usize>, String> {
        let topics = tokio::time::timeout(META_TIMEOUT, client.list_topics())
            .await
            .map_err(|_| "no answer to a metadata request".to_string())?
            .map_err(|e| format!("listing Kafka topics: {e}"))?;
        Ok(topics
            .into_iter()
            .find(|t| t.name == topic)
            .map(|t| t.partitions.len())
            .filter(|&n| n > 0))
    }

    fn key_of(&self, topic: &str, r: &LogRecord) -> Option<Vec<u8>> {
        match &self.cfg.key {
            KeyFrom::Topic => Some(topic.as_bytes().to_vec()),
            KeyFrom::None => None,
            KeyFrom::Header(name) => fogline_wire::header_entries(&r.headers)
                .ok()?
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.to_vec()),
        }
    }

    fn to_kafka(&self, _topic: &str, r: &LogRecord, key: Option<Vec<u8>>) -> Record {
        let mut headers = BTreeMap::new();
        if self.cfg.headers {
            if let Ok(entries) = fogline_wire::header_entries(&r.headers) {
                for (k, v) in entries {
                    // Kafka headers may repeat but rskafka keeps one per name: the first.
                    headers.entry(k.to_string()).or_insert_with(|| v.to_vec());
                }
            }
        }
        headers.insert(ORIGIN_NODE.to_string(), self.node.as_bytes().to_vec());
        headers.insert(
            ORIGIN_STREAM.to_string(),
            self.cfg.stream.as_bytes().to_vec(),
        );
        headers.insert(ORIGIN_OFFSET.to_string(), r.offset.to_string().into_bytes());
        let ms = (r.timestamp / 1000) as i64;
        Record {
            key,
            value: Some(r.payload.to_vec()),
            headers,
            timestamp: chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default(),
        }
    }

    fn compression(&self) -> rskafka::client::partition::Compression {
        use rskafka::client::partition::Compression as C;
        match self.cfg.compression {
            Compression::None => C::NoCompression,
            Compression::Gzip => C::Gzip,
            Compression::Snappy => C::Snappy,
        }
    }

    /// Records retention dropped before they were forwarded: counted and logged, and the
    /// bridge goes on from the oldest one kept.
    fn follow_retention(&mut self, stream: &Stream) {
        if let Some(first) = stream::lost_to_retention(stream, self.cursor, &self.status) {
            self.advance(first);
            self.save();
        }
    }

    /// Moves the position on, and the retention hold with it.
    fn advance(&mut self, cursor: u64) {
        self.cursor = cursor;
        if let Some(h) = &self.hold {
            h.set(cursor);
        }
    }

    fn save(&mut self) {
        if let Err(e) = self.position.save(&self.cfg.stream, self.cursor) {
            tracing::warn!(bridge = %self.status.name, error = %e, "cannot save the bridge's position (a restart replays more, and skips what Kafka holds)");
        }
    }
}
