//! Retained messages: the last retained message of each topic, replaced by
//! the next and deleted by one with an empty payload [MQTT-3.3.1-10/11].

use std::collections::HashMap;

use fogline_wire::filter_matches;
use parking_lot::RwLock;

use crate::message::Message;

/// The retained messages of a server, by topic.
#[derive(Default)]
pub(crate) struct Retained {
    map: RwLock<HashMap<String, Message>>,
}

impl Retained {
    /// Stores `msg` for its topic, or deletes the topic's message when the
    /// payload is empty.
    pub fn apply(&self, msg: &Message) {
        let _ = self.apply_then(msg, || Ok::<(), std::convert::Infallible>(()));
    }

    /// As [`apply`](Retained::apply), running `then` (the journal write) before others
    /// may change the map: two publishers' journal entries keep the order of their changes.
    /// When `then` fails, the map stays as it was, as the journal does.
    pub fn apply_then<E>(
        &self,
        msg: &Message,
        then: impl FnOnce() -> Result<(), E>,
    ) -> Result<(), E> {
        let mut map = self.map.write();
        then()?;
        if msg.payload.is_empty() {
            map.remove(msg.topic.as_str());
        } else {
            let mut m = msg.clone();
            m.retain = true;
            map.insert(msg.topic.to_string(), m);
        }
        Ok(())
    }

    /// Unexpired retained messages whose topic matches `filter`, oldest first.
    pub fn matching(&self, filter: &str, now: u64) -> Vec<Message> {
        let map = self.map.read();
        let mut out: Vec<Message> = map
            .iter()
            .filter(|(t, m)| filter_matches(filter, t) && !m.expired(now))
            .map(|(_, m)| m.clone())
            .collect();
        out.sort_by_key(|m| m.received);
        out
    }

    /// Every retained message (for a snapshot of the journal).
    pub fn all(&self) -> Vec<Message> {
        self.map.read().values().cloned().collect()
    }

    /// Number of retained topics.
    pub fn len(&self) -> usize {
        self.map.read().len()
    }
}
