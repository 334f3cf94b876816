//! `[[bridge.kafka_in]]`: Kafka topics consumed into fogline.

use std::time::Duration;

use bytesize::ByteSize;
use serde::{Deserialize, Serialize};

use crate::config::{
    bridge_name, default_batch_bytes, default_batch_records, default_retry_max, default_separator,
    default_topic, yes, Start,
};

/// One `[[bridge.kafka_in]]`: Kafka topics consumed into fogline, at least once, each
/// record published (acknowledged: stored in the streams that capture its topic) with its
/// Kafka origin in headers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaInConfig {
    /// The bridge's name (in the API and metrics); default `kafka-in-N`.
    #[serde(default)]
    pub name: Option<String>,
    /// Kafka bootstrap servers, `host:port`.
    pub bootstrap: Vec<String>,
    /// The Kafka topics consumed, every partition of each.
    pub topics: Vec<String>,
    /// The consumer group whose committed offsets the bridge keeps in Kafka.
    pub group: String,
    /// The fogline topic: a name, or a template where `{topic}` is the Kafka topic with
    /// `topic_separator` turned into `/`.
    #[serde(default = "default_topic")]
    pub topic: String,
    /// What becomes `/` in `{topic}`.
    #[serde(default = "default_separator")]
    pub topic_separator: String,
    /// Where a partition starts when the group has no offset committed for it and fogline
    /// holds none of its records.
    #[serde(default)]
    pub start: Start,
    /// Carry the Kafka records' headers as fogline headers.
    #[serde(default = "yes")]
    pub headers: bool,
    /// Most records per batch published into fogline.
    #[serde(default = "default_batch_records")]
    pub batch_records: usize,
    /// Most bytes per fetch request, per partition.
    #[serde(default = "default_batch_bytes")]
    pub batch_bytes: ByteSize,
    /// Longest wait of a fetch request for new records.
    #[serde(default = "default_fetch_wait", with = "humantime_serde")]
    pub fetch_wait: Duration,
    /// How often the offsets of stored records are committed to Kafka.
    #[serde(default = "default_commit_interval", with = "humantime_serde")]
    pub commit_interval: Duration,
    /// Longest wait between two attempts to reach Kafka.
    #[serde(default = "default_retry_max", with = "humantime_serde")]
    pub retry_max: Duration,
    /// TLS and SASL to Kafka (`kafka::security`); none by default.
    #[serde(default)]
    pub security: crate::kafka::security::KafkaSecurity,
}

fn default_fetch_wait() -> Duration {
    Duration::from_millis(500)
}
fn default_commit_interval() -> Duration {
    Duration::from_secs(1)
}

impl KafkaInConfig {
    /// A bridge of `topics` at `bootstrap` for `group`, every other setting at its default.
    pub fn new(bootstrap: Vec<String>, topics: Vec<String>, group: impl Into<String>) -> Self {
        KafkaInConfig {
            name: None,
            bootstrap,
            topics,
            group: group.into(),
            topic: default_topic(),
            topic_separator: default_separator(),
            start: Start::Earliest,
            headers: true,
            batch_records: default_batch_records(),
            batch_bytes: default_batch_bytes(),
            fetch_wait: default_fetch_wait(),
            commit_interval: default_commit_interval(),
            retry_max: default_retry_max(),
            security: Default::default(),
        }
    }

    /// The fogline topic of the records of Kafka topic `ktopic`.
    pub fn fogline_topic(&self, ktopic: &str) -> String {
        let topic = if self.topic_separator.is_empty() {
            ktopic.to_string()
        } else {
            ktopic.replace(&self.topic_separator, "/")
        };
        self.topic.replace("{topic}", &topic)
    }
}

/// Checks the `[[bridge.kafka_in]]` tables and appends their names (given or
/// `kafka-in-N`) to `names`, the names taken so far.
pub(crate) fn check(list: &[KafkaInConfig], names: &mut Vec<String>) -> Result<(), String> {
    let first = names.len();
    for (i, k) in list.iter().enumerate() {
        let name = bridge_name("kafka_in", k.name.as_deref(), i, names)?;
        let err = |m: String| Err(format!("[[bridge.kafka_in]] {name:?}: {m}"));
        if k.bootstrap.is_empty() {
            return err("bootstrap is empty".into());
        }
        if k.topics.is_empty() {
            return err("topics is empty".into());
        }
        if k.group.is_empty() {
            return err("group is empty".into());
        }
        if let Err(e) = k.security.check() {
            return err(e);
        }
        for t in &k.topics {
            if t.is_empty() || crate::kafka::check_template(t).is_err() || t.contains('{') {
                return err(format!("{t:?} is not a Kafka topic name"));
            }
            let ft = k.fogline_topic(t);
            if let Err(e) = fogline_wire::validate_topic(&ft) {
                return err(format!("Kafka topic {t:?} makes fogline topic {ft:?}: {e}"));
            }
            if ft.contains(['+', '#']) {
                return err(format!("fogline topic {ft:?} holds a wildcard"));
            }
            // Resuming reads back the newest record of each partition by its origin headers
            // and fogline topic: two bridges writing the same pair would take each other's.
            let twin = list[..i]
                .iter()
                .enumerate()
                .find(|(_, o)| o.topics.contains(t) && o.fogline_topic(t) == ft);
            if let Some((j, _)) = twin {
                let other = &names[first + j];
                return err(format!(
                    "bridge {other:?} already consumes Kafka topic {t:?} into {ft:?}"
                ));
            }
        }
        if k.batch_records == 0 || k.batch_bytes.as_u64() == 0 {
            return err("batch_records and batch_bytes must be above 0".into());
        }
        if k.batch_bytes.as_u64() > i32::MAX as u64 {
            return err("batch_bytes must be below 2 GiB".into());
        }
        if k.commit_interval.is_zero() {
            return err("commit_interval must be above 0".into());
        }
        names.push(name);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BridgeConfig;

    #[test]
    fn kafka_topics_become_fogline_topics() {
        let mut k = KafkaInConfig::new(vec!["b:1".into()], vec!["site.r1".into()], "g");
        assert_eq!(k.fogline_topic("site.r1.temp"), "site/r1/temp");
        k.topic = "kafka/{topic}".into();
        k.topic_separator = "_".into();
        assert_eq!(k.fogline_topic("a_b.c"), "kafka/a/b.c");
        k.topic = "fixed/in".into();
        assert_eq!(k.fogline_topic("x"), "fixed/in");
    }

    #[test]
    fn bad_bridges_are_refused_with_their_name() {
        let mut c = BridgeConfig::default();
        c.kafka_in
            .push(KafkaInConfig::new(vec!["b:1".into()], vec![], "g"));
        assert!(c
            .check()
            .unwrap_err()
            .contains("\"kafka-in-1\": topics is empty"));
        c.kafka_in[0].topics.push("t.a".into());
        assert_eq!(c.check().unwrap(), ["kafka-in-1"]);
        c.kafka_in.push(c.kafka_in[0].clone());
        assert!(c.check().unwrap_err().contains("already consumes"));
        c.kafka_in[1].topic = "other/{topic}".into();
        assert_eq!(c.check().unwrap(), ["kafka-in-1", "kafka-in-2"]);
        c.kafka_in[1].topic = "a/+/{topic}".into();
        assert!(c.check().unwrap_err().contains("wildcard"));
        c.kafka_in[1].topic = "{topic}".into();
        c.kafka_in[1].topics = vec!["bad topic".into()];
        assert!(c.check().unwrap_err().contains("not a Kafka topic"));
        c.kafka_in[1].topics = vec!["x".into()];
        c.kafka_in[1].group = String::new();
        assert!(c.check().unwrap_err().contains("group is empty"));
        c.kafka_in[1].group = "g".into();
        c.kafka_in[1].name = Some("kafka-in-1".into());
        assert!(c.check().unwrap_err().contains("two bridges"));
    }
}
