//! Kafka: the client settings every Kafka bridge shares, topic names, the partitioner, and
//! the origin headers that let a bridge find what the other side already holds (Kafka, for
//! `out`; fogline's streams, for `inbound`).
//!
//! The client is rskafka (pure Rust). Its own retries are turned off (a deadline of zero):
//! a produce request it sent again after an error could be written twice, so errors come
//! back to the bridge, which learns from Kafka what was written before it sends anything
//! again (`tail`).

pub mod group;
pub mod inbound;
pub mod out;
pub mod resume;
pub mod security;
pub mod socks;
pub mod tail;

use std::time::Duration;

use rskafka::client::{Client, ClientBuilder};
use rskafka::BackoffConfig;

/// Header naming the node a record was forwarded from.
pub const ORIGIN_NODE: &str = "fogline-node";
/// Header naming the stream it was read from.
pub const ORIGIN_STREAM: &str = "fogline-stream";
/// Header with its offset in that stream (decimal).
pub const ORIGIN_OFFSET: &str = "fogline-offset";

/// Header of a record consumed from Kafka: its Kafka topic.
pub const KAFKA_TOPIC: &str = "kafka-topic";
/// Its partition (decimal).
pub const KAFKA_PARTITION: &str = "kafka-partition";
/// Its offset in the partition (decimal).
pub const KAFKA_OFFSET: &str = "kafka-offset";
/// Its Kafka timestamp, milliseconds since the UNIX epoch (decimal).
pub const KAFKA_TIMESTAMP: &str = "kafka-timestamp";
/// Its Kafka key, when it has one (the key's bytes).
pub const KAFKA_KEY: &str = "kafka-key";

/// Longest wait for a connection or a metadata answer (a request that wrote nothing, so
/// giving up on it is safe).
pub const META_TIMEOUT: Duration = Duration::from_secs(15);

/// Kafka's longest topic name.
const TOPIC_MAX: usize = 249;

/// A client of `bootstrap` that does not retry on its own, with `secure`'s TLS and SASL.
///
/// # Errors
/// When no bootstrap server answers within [`META_TIMEOUT`], or TLS or SASL fails.
pub async fn connect(
    bootstrap: &[String],
    client_id: &str,
    secure: &security::Secure,
) -> Result<Client, String> {
    let backoff = BackoffConfig {
        init_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_secs(1),
        base: 2.0,
        deadline: Some(Duration::ZERO),
    };
    let mut build = ClientBuilder::new(bootstrap.to_vec())
        .client_id(client_id)
        .backoff_config(backoff);
    if let Some(sasl) = secure.sasl_config() {
        build = build.sasl_config(sasl);
    }
    if let Some(proxy) = secure.proxy().await? {
        build = build.socks5_proxy(proxy);
    }
    // What the relay saw before belongs to an earlier attempt.
    let _ = secure.take_failure();
    match tokio::time::timeout(META_TIMEOUT, build.build()).await {
        Ok(Ok(c)) => Ok(c),
        // The relay knows why TLS failed; rskafka only saw the proxy refuse.
        Ok(Err(e)) => Err(format!(
            "cannot reach Kafka at {}: {}",
            bootstrap.join(","),
            secure.take_failure().unwrap_or_else(|| e.to_string())
        )),
        Err(_) => Err(format!(
            "no answer from Kafka at {} within {META_TIMEOUT:?}",
            bootstrap.join(",")
        )),
    }
}

/// Checks a topic template: `{topic}` and `{stream}` are its only placeholders, and the rest
/// is a legal Kafka topic name.
///
/// # Errors
/// What is wrong.
pub fn check_template(template: &str) -> Result<(), String> {
    let rest = template.replace("{topic}", "t").replace("{stream}", "s");
    if rest.is_empty() || rest == "." || rest == ".." {
        return Err(format!("topic {template:?} is not a Kafka topic name"));
    }
    match rest.chars().find(|&c| !legal(c)) {
        Some(c) => Err(format!(
            "topic {template:?}: {c:?} is not allowed in a Kafka topic name \
             (letters, digits, '.', '_', '-'; placeholders {{topic}} and {{stream}})"
        )),
        None => Ok(()),
    }
}

fn legal(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// The Kafka topic of a record of `topic` in `stream`: the template with its placeholders
/// filled, `/` turned into `separator` in `{topic}`, and every character Kafka refuses turned
/// into `_`. A name longer than Kafka allows keeps its first 240 characters and a hash of the
/// whole, so that two long names stay apart.
pub fn render(template: &str, topic: &str, stream: &str, separator: &str) -> String {
    let mut name = String::with_capacity(template.len() + topic.len());
    let mut rest = template;
    while let Some(i) = rest.find('{') {
        name.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("{topic}") {
            name.push_str(&topic.replace('/', separator));
            rest = t;
        } else if let Some(t) = tail.strip_prefix("{stream}") {
            name.push_str(stream);
            rest = t;
        } else {
            name.push('{');
            rest = &tail[1..];
        }
    }
    name.push_str(rest);
    let mut name: String = name
        .chars()
        .map(|c| if legal(c) { c } else { '_' })
        .collect();
    if name == "." || name == ".." || name.is_empty() {
        name = name.replace('.', "_") + "_";
    }
    if name.len() > TOPIC_MAX {
        let hash = murmur2(name.as_bytes());
        name.truncate(240);
        name = format!("{name}-{hash:08x}");
    }
    name
}

/// Kafka's murmur2 hash (MurmurHash2, 32 bits, seed `0x9747b28c`), as its Java producer
/// computes it for keys.
pub fn murmur2(data: &[u8]) -> u32 {
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let mut h: u32 = 0x9747_b28c ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        h ^= u32::from(tail[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h
}

/// The partition Kafka's producer picks for `key` among `partitions`.
pub fn partition_of(key: &[u8], partitions: usize) -> usize {
    (murmur2(key) & 0x7fff_ffff) as usize % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_is_kafkas() {
        // Kafka's own test vectors (clients' UtilsTest), as Java ints.
        let cases: [(&[u8], i32); 6] = [
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58_897_971,
            ),
            (b"abc", 479_470_107),
        ];
        for (data, want) in cases {
            assert_eq!(
                murmur2(data) as i32,
                want,
                "{:?}",
                std::str::from_utf8(data)
            );
        }
    }

    #[test]
    fn templates_render_legal_names() {
        assert_eq!(render("{topic}", "site/r1/temp", "s", "."), "site.r1.temp");
        assert_eq!(render("edge-{stream}", "a/b", "tele", "."), "edge-tele");
        assert_eq!(render("x.{topic}", "ä b/c", "s", "_"), "x.__b_c");
        assert_eq!(render("{topic}", "..", "s", "."), "___");
        assert_eq!(render("{x}{topic}", "a", "s", "."), "_x_a");
        let long = render("{topic}", &"a/".repeat(300), "s", ".");
        assert_eq!(long.len(), 249);
        assert_ne!(long, render("{topic}", &"a/".repeat(301), "s", "."));
        assert!(check_template("{topic}").is_ok());
        assert!(check_template("site.{topic}-{stream}").is_ok());
        assert!(check_template("a b").is_err());
        assert!(check_template("..").is_err());
    }

    #[test]
    fn partitions_spread_keys_and_stay_in_range() {
        let mut seen = [0usize; 4];
        for i in 0..1000 {
            seen[partition_of(format!("k{i}").as_bytes(), 4)] += 1;
        }
        assert!(seen.iter().all(|&n| n > 150), "{seen:?}");
        assert_eq!(partition_of(b"x", 1), 0);
    }
}
