//! An in-process driver: a topic is a list of channels. It measures the harness's own
//! overhead (the floor under every other system's figures) and lets tests inject faults.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::mpsc;

use crate::driver::{Driver, DriverResult, Publisher, Received, Subscriber};
use crate::payload;

type Topics = Arc<Mutex<HashMap<String, Vec<mpsc::UnboundedSender<Bytes>>>>>;

/// Faults to inject, each every n-th message of a publisher (0: never).
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    /// Drop every n-th message.
    pub drop_every: u64,
    /// Send every n-th message twice.
    pub duplicate_every: u64,
    /// Hold every n-th message back and send it after the next one.
    pub swap_every: u64,
}

/// The in-process driver.
#[derive(Clone, Default)]
pub struct MemoryDriver {
    topics: Topics,
    faults: Faults,
}

impl MemoryDriver {
    /// A driver that injects `faults`.
    pub fn with_faults(faults: Faults) -> Self {
        Self {
            topics: Topics::default(),
            faults,
        }
    }
}

struct MemPub {
    topic: String,
    topics: Topics,
    faults: Faults,
    n: u64,
    held: Option<Bytes>,
}

impl MemPub {
    fn deliver(&self, m: &Bytes) {
        if let Ok(t) = self.topics.lock() {
            for tx in t.get(&self.topic).into_iter().flatten() {
                let _ = tx.send(m.clone());
            }
        }
    }
}

fn every(k: u64, n: u64) -> bool {
    k > 0 && n % k == k - 1
}

#[async_trait]
impl Publisher for MemPub {
    async fn send(&mut self, payload: Bytes) -> DriverResult<()> {
        // Warm-up probes are never faulted, so fault positions count measured messages only.
        if payload::decode(&payload).is_none_or(|h| h.producer == payload::WARMUP_PRODUCER) {
            self.deliver(&payload);
            return Ok(());
        }
        let n = self.n;
        self.n += 1;
        if every(self.faults.drop_every, n) {
            return Ok(());
        }
        if every(self.faults.swap_every, n) && self.held.is_none() {
            self.held = Some(payload);
            return Ok(());
        }
        self.deliver(&payload);
        if every(self.faults.duplicate_every, n) {
            self.deliver(&payload);
        }
        if let Some(h) = self.held.take() {
            self.deliver(&h);
        }
        Ok(())
    }

    async fn flush(&mut self) -> DriverResult<()> {
        if let Some(h) = self.held.take() {
            self.deliver(&h);
        }
        Ok(())
    }
}

struct MemSub(mpsc::UnboundedReceiver<Bytes>);

#[async_trait]
impl Subscriber for MemSub {
    async fn recv(&mut self) -> DriverResult<Option<Received>> {
        Ok(self.0.recv().await.map(Received::now))
    }
}

#[async_trait]
impl Driver for MemoryDriver {
    fn name(&self) -> &'static str {
        "memory"
    }

    async fn publisher(&self, topic: &str) -> DriverResult<Box<dyn Publisher>> {
        Ok(Box::new(MemPub {
            topic: topic.to_string(),
            topics: self.topics.clone(),
            faults: self.faults,
            n: 0,
            held: None,
        }))
    }

    async fn subscriber(&self, topic: &str) -> DriverResult<Box<dyn Subscriber>> {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut t) = self.topics.lock() {
            t.entry(topic.to_string()).or_default().push(tx);
        }
        Ok(Box::new(MemSub(rx)))
    }
}
