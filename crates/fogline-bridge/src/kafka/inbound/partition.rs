//! One partition's task of a Kafka-in bridge: fetch from Kafka, publish into the broker
//! acknowledged, and only then move the partition's position past what was stored.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use fogline_broker::link::{Link, PublishOptions};
use fogline_wire::{HeadersBuilder, RecordBlock};
use rskafka::client::error::{Error as KafkaError, ProtocolError};
use rskafka::client::partition::{OffsetAt, PartitionClient};
use rskafka::record::RecordAndOffset;
use tokio::sync::watch;

use super::Progresses;
use crate::config::Start;
use crate::config_in::KafkaInConfig;
use crate::kafka::resume::Partition;
use crate::kafka::META_TIMEOUT;
use crate::kafka::{KAFKA_KEY, KAFKA_OFFSET, KAFKA_PARTITION, KAFKA_TIMESTAMP, KAFKA_TOPIC};
use crate::status::BridgeStatus;

/// A partition's offset at `at`.
pub(super) async fn offset_at(pc: &PartitionClient, at: OffsetAt) -> Result<i64, String> {
    tokio::time::timeout(META_TIMEOUT, pc.get_offset(at))
        .await
        .map_err(|_| "no answer to a list-offsets request".to_string())?
        .map_err(|e| format!("{}/{}: {e}", pc.topic(), pc.partition()))
}

/// One partition's task: fetch, store, move on.
pub(super) struct Worker {
    pub(super) key: Partition,
    pub(super) ftopic: String,
    pub(super) pc: Arc<PartitionClient>,
    pub(super) cfg: Arc<KafkaInConfig>,
    pub(super) link: Link,
    pub(super) status: Arc<BridgeStatus>,
    pub(super) progress: Progresses,
}

impl Worker {
    /// Runs until `halt` (`Ok`) or a failure.
    pub(super) async fn run(self, mut halt: watch::Receiver<bool>) -> Result<(), String> {
        let wait_ms = i32::try_from(self.cfg.fetch_wait.as_millis()).unwrap_or(i32::MAX);
        let bytes = i32::try_from(self.cfg.batch_bytes.as_u64()).unwrap_or(i32::MAX);
        let limit = self.cfg.fetch_wait + META_TIMEOUT;
        loop {
            if *halt.borrow() {
                return Ok(());
            }
            let next = self.progress.lock()[&self.key].next;
            let fetch = tokio::time::timeout(limit, self.pc.fetch_records(next, 1..bytes, wait_ms));
            let fetched = tokio::select! {
                r = fetch => r.map_err(|_| format!("{}: no answer to a fetch request", self.name()))?,
                _ = halt.changed() => return Ok(()),
            };
            let (records, high) = match fetched {
                Ok(x) => x,
                Err(KafkaError::ServerError {
                    protocol_error: ProtocolError::OffsetOutOfRange,
                    ..
                }) => {
                    self.out_of_range(next).await?;
                    continue;
                }
                Err(e) => return Err(format!("fetching {}: {e}", self.name())),
            };
            self.progress
                .lock()
                .get_mut(&self.key)
                .expect("placed before the tasks start")
                .high = high;
            // A compressed batch may start before the offset asked for.
            let records: Vec<RecordAndOffset> =
                records.into_iter().filter(|r| r.offset >= next).collect();
            for chunk in records.chunks(self.cfg.batch_records) {
                self.store(chunk).await?;
            }
        }
    }

    fn name(&self) -> String {
        format!("{}/{}", self.key.0, self.key.1)
    }

    /// Publishes `chunk` acknowledged, then moves the partition's position past it.
    async fn store(&self, chunk: &[RecordAndOffset]) -> Result<(), String> {
        let Some(last) = chunk.last() else {
            return Ok(());
        };
        let max = self.link.broker().max_message();
        let mut headers = Vec::with_capacity(chunk.len());
        let mut payload_bytes = 0u64;
        let mut too_large = 0u64;
        for r in chunk {
            let h = self.headers_of(r)?;
            let len = r.record.value.as_ref().map_or(0, Vec::len);
            if h.len() + len > max {
                too_large += 1;
                tracing::error!(bridge = %self.status.name, partition = %self.name(), offset = r.offset, size = h.len() + len, max, "a Kafka record is larger than fogline's message limit: dropped");
                continue;
            }
            payload_bytes += len as u64;
            headers.push((h, r));
        }
        if !headers.is_empty() {
            let block = RecordBlock::from_records(headers.iter().map(|(h, r)| {
                let payload = r.record.value.as_deref().unwrap_or_default();
                (0, &h[..], payload)
            }))
            .map_err(|e| format!("{}: {e}", self.name()))?;
            let opts = PublishOptions {
                acked: true,
                priority: false,
            };
            self.link
                .publish_block(&self.ftopic, block, opts)
                .await
                .map_err(|e| format!("storing {} in fogline: {e}", self.name()))?;
        }
        self.status.dropped.fetch_add(too_large, Relaxed);
        self.status.carried(headers.len() as u64, payload_bytes);
        let mut progress = self.progress.lock();
        let p = progress
            .get_mut(&self.key)
            .expect("placed before the tasks start");
        p.next = last.offset + 1;
        p.last_us = (last.record.timestamp.timestamp_millis().max(0) as u64) * 1000;
        Ok(())
    }

    /// The fogline headers of a Kafka record: its origin, then its own headers (those that
    /// would shadow the origin left out).
    fn headers_of(&self, r: &RecordAndOffset) -> Result<bytes::Bytes, String> {
        let mut b = HeadersBuilder::new()
            .add(KAFKA_TOPIC, &self.key.0)
            .add(KAFKA_PARTITION, self.key.1.to_string())
            .add(KAFKA_OFFSET, r.offset.to_string())
            .add(
                KAFKA_TIMESTAMP,
                r.record.timestamp.timestamp_millis().to_string(),
            );
        if let Some(k) = &r.record.key {
            b = b.add(KAFKA_KEY, k);
        }
        if self.cfg.headers {
            for (k, v) in &r.record.headers {
                let ours = [
                    KAFKA_TOPIC,
                    KAFKA_PARTITION,
                    KAFKA_OFFSET,
                    KAFKA_TIMESTAMP,
                    KAFKA_KEY,
                ];
                if !ours.contains(&k.as_str()) {
                    b = b.add(k, v);
                }
            }
        }
        b.finish()
            .map_err(|e| format!("{} offset {}: headers: {e}", self.name(), r.offset))
    }

    /// The position is outside what Kafka keeps: before it (retention deleted records not
    /// yet consumed: counted as dropped and logged), or past it (the topic was recreated:
    /// `start` applies).
    async fn out_of_range(&self, next: i64) -> Result<(), String> {
        let earliest = offset_at(&self.pc, OffsetAt::Earliest).await?;
        let latest = offset_at(&self.pc, OffsetAt::Latest).await?;
        let to = if next < earliest {
            let lost = (earliest - next) as u64;
            self.status.dropped.fetch_add(lost, Relaxed);
            tracing::error!(bridge = %self.status.name, partition = %self.name(), from = next, to = earliest, lost, "Kafka's retention deleted records before they were consumed");
            earliest
        } else {
            let to = match self.cfg.start {
                Start::Earliest => earliest,
                Start::Latest => latest,
            };
            tracing::warn!(bridge = %self.status.name, partition = %self.name(), position = next, earliest, latest, to, "the partition no longer holds this position (was the topic recreated?)");
            to
        };
        let mut progress = self.progress.lock();
        let p = progress
            .get_mut(&self.key)
            .expect("placed before the tasks start");
        p.next = to;
        p.high = latest;
        Ok(())
    }
}
