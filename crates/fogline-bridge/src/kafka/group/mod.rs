//! A consumer group's committed offsets in Kafka, for a consumer that assigns itself its
//! partitions (no group membership, no rebalancing): find the group's coordinator, fetch the
//! offsets committed, commit new ones. Tools read them as any group's
//! (`kafka-consumer-groups.sh --describe --group G` shows its lag).
//!
//! rskafka has no such requests, so `codec` encodes them and this module sends them over
//! its own connection to the coordinator, one request at a time.

pub mod codec;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rskafka::client::error::ProtocolError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::security::{KafkaIo, Secure};

/// Largest response accepted (an answer for thousands of partitions is far smaller).
const MAX_RESPONSE: usize = 16 << 20;

/// Kafka's error codes that mean "ask again, perhaps elsewhere": the coordinator is loading,
/// not available, or moved.
const COORDINATOR_LOADING: i16 = 14;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const NOT_COORDINATOR: i16 = 16;

/// Offsets per topic and partition: the next offset to read.
pub type Offsets = HashMap<(String, i32), i64>;

/// A group's offsets, through its coordinator. See the [module docs](self).
pub struct Group {
    bootstrap: Vec<String>,
    group: String,
    client_id: String,
    timeout: Duration,
    secure: Arc<Secure>,
    conn: Option<Box<dyn KafkaIo>>,
    correlation: i32,
}

/// Kafka's name for an error code.
fn code_name(code: i16) -> String {
    ProtocolError::new(code).map_or_else(|| format!("error {code}"), |e| format!("{e:?}"))
}

fn retriable(code: i16) -> bool {
    matches!(
        code,
        COORDINATOR_LOADING | COORDINATOR_NOT_AVAILABLE | NOT_COORDINATOR
    )
}

impl Group {
    /// The group `group`, reached through `bootstrap` with `secure`'s TLS and SASL; every
    /// request is given up after `timeout` (they only read or overwrite offsets, so asking
    /// again is safe).
    pub fn new(
        bootstrap: &[String],
        group: &str,
        client_id: &str,
        timeout: Duration,
        secure: Arc<Secure>,
    ) -> Self {
        Group {
            bootstrap: bootstrap.to_vec(),
            group: group.to_string(),
            client_id: client_id.to_string(),
            timeout,
            secure,
            conn: None,
            correlation: 0,
        }
    }

    /// The offsets committed for `topics`' partitions; partitions with none are left out.
    ///
    /// # Errors
    /// Kafka cannot be reached or refuses, within the timeout.
    pub async fn fetch(&mut self, topics: &[(String, Vec<i32>)]) -> Result<Offsets, String> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let c = self.next_correlation();
            let frame = codec::offset_fetch(c, &self.client_id, &self.group, topics);
            let body = self.call(&frame, c).await?;
            let answer = codec::decode_offset_fetch(&body).map_err(|e| e.to_string())?;
            let first_error = std::iter::once(answer.error)
                .chain(answer.partitions.iter().map(|p| p.error))
                .find(|&e| e != 0);
            match first_error {
                None => {
                    return Ok(answer
                        .partitions
                        .into_iter()
                        .filter(|p| p.offset >= 0)
                        .map(|p| ((p.topic, p.partition), p.offset))
                        .collect())
                }
                Some(e) if retriable(e) && Instant::now() < deadline => self.retry(e).await,
                Some(e) => {
                    return Err(format!(
                        "fetching group {:?}'s offsets: {}",
                        self.group,
                        code_name(e)
                    ))
                }
            }
        }
    }

    /// Commits `offsets` (each the next offset to read).
    ///
    /// # Errors
    /// Kafka cannot be reached or refuses, within the timeout: for example
    /// `UnknownMemberId` when members that joined the group (consumers that subscribe)
    /// hold it.
    pub async fn commit(&mut self, offsets: &Offsets) -> Result<(), String> {
        let mut by_topic: HashMap<&str, Vec<(i32, i64)>> = HashMap::new();
        for ((t, p), o) in offsets {
            by_topic.entry(t).or_default().push((*p, *o));
        }
        let list: Vec<(String, Vec<(i32, i64)>)> = by_topic
            .into_iter()
            .map(|(t, mut ps)| {
                ps.sort_unstable();
                (t.to_string(), ps)
            })
            .collect();
        let deadline = Instant::now() + self.timeout;
        loop {
            let c = self.next_correlation();
            let frame = codec::offset_commit(c, &self.client_id, &self.group, &list);
            let body = self.call(&frame, c).await?;
            let answer = codec::decode_offset_commit(&body).map_err(|e| e.to_string())?;
            match answer.iter().find(|p| p.error != 0) {
                None => return Ok(()),
                Some(p) if retriable(p.error) && Instant::now() < deadline => {
                    self.retry(p.error).await
                }
                Some(p) => {
                    return Err(format!(
                        "committing group {:?}'s offset of {}/{}: {}",
                        self.group,
                        p.topic,
                        p.partition,
                        code_name(p.error)
                    ))
                }
            }
        }
    }

    fn next_correlation(&mut self) -> i32 {
        self.correlation = self.correlation.wrapping_add(1);
        self.correlation
    }

    /// After a retriable error: forget the coordinator (it may have moved) and pause.
    async fn retry(&mut self, code: i16) {
        tracing::debug!(group = %self.group, error = %code_name(code), "asking the group coordinator again");
        self.conn = None;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    /// Sends a request to the coordinator and returns its answer's body. Any failure drops
    /// the connection, so the next request starts over from the bootstrap servers.
    async fn call(&mut self, frame: &[u8], correlation: i32) -> Result<Vec<u8>, String> {
        let result = tokio::time::timeout(self.timeout, async {
            // Taken out while in use: an exchange cut off (a timeout, or the caller giving
            // up on stop) drops the connection, whose next answer would be this one's.
            // A kept connection may have been closed by the broker meanwhile (idle for
            // connections.max.idle.ms, or its SASL session expired): one more try on a new
            // one. The requests only read or overwrite offsets, so sending again is safe.
            let (mut conn, kept) = match self.conn.take() {
                Some(c) => (c, true),
                None => (self.coordinator().await?, false),
            };
            let mut answer = exchange(&mut conn, frame, correlation).await;
            if answer.is_err() && kept {
                conn = self.coordinator().await?;
                answer = exchange(&mut conn, frame, correlation).await;
            }
            if answer.is_ok() {
                self.conn = Some(conn);
            }
            answer
        })
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "no answer from the group coordinator within {:?}",
                self.timeout
            ))
        });
        if result.is_err() {
            self.conn = None;
        }
        result
    }

    /// A connection to the group's coordinator, found through the first bootstrap server
    /// that answers.
    async fn coordinator(&mut self) -> Result<Box<dyn KafkaIo>, String> {
        let mut last = String::from("no bootstrap server");
        let deadline = Instant::now() + self.timeout;
        while Instant::now() < deadline {
            for addr in self.bootstrap.clone() {
                let c = self.next_correlation();
                let frame = codec::find_coordinator(c, &self.client_id, &self.group);
                let found = async {
                    let mut conn = self.secure.connect(&addr, &self.client_id).await?;
                    let body = exchange(&mut conn, &frame, c).await?;
                    codec::decode_find_coordinator(&body).map_err(|e| e.to_string())
                }
                .await;
                match found {
                    Ok(co) if co.error == 0 => {
                        let at = format!("{}:{}", co.host, co.port);
                        return self
                            .secure
                            .connect(&at, &self.client_id)
                            .await
                            .map_err(|e| format!("group coordinator {e}"));
                    }
                    Ok(co) if retriable(co.error) => last = code_name(co.error),
                    Ok(co) => {
                        return Err(format!(
                            "finding group {:?}'s coordinator: {} {}",
                            self.group,
                            code_name(co.error),
                            co.message.unwrap_or_default()
                        ))
                    }
                    Err(e) => last = e,
                }
            }
            // The offsets topic is created on the first request; it takes a moment.
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Err(format!(
            "finding group {:?}'s coordinator: {last}",
            self.group
        ))
    }
}

/// Writes one request frame and reads its answer's body.
pub(super) async fn exchange(
    conn: &mut Box<dyn KafkaIo>,
    frame: &[u8],
    correlation: i32,
) -> Result<Vec<u8>, String> {
    let io = |e: std::io::Error| format!("group coordinator connection: {e}");
    conn.write_all(frame).await.map_err(io)?;
    let size = conn.read_i32().await.map_err(io)?;
    let size = usize::try_from(size)
        .ok()
        .filter(|&s| s <= MAX_RESPONSE)
        .ok_or_else(|| format!("Kafka answered with a frame of {size} bytes"))?;
    let mut buf = vec![0u8; size];
    conn.read_exact(&mut buf).await.map_err(io)?;
    let body = codec::response_body(&buf, correlation).map_err(|e| e.to_string())?;
    Ok(body.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A coordinator of its own: answers FindCoordinator with itself and OffsetFetch with
    /// offset 7 for partition 0, and closes each connection after one OffsetFetch (as a
    /// broker closes an idle connection, or one whose SASL session expired).
    async fn fake_coordinator() -> (String, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut c, _)) = listener.accept().await else {
                    return;
                };
                tokio::spawn(async move {
                    loop {
                        let Ok(size) = c.read_i32().await else { return };
                        let mut req = vec![0u8; size as usize];
                        if c.read_exact(&mut req).await.is_err() {
                            return;
                        }
                        let key = i16::from_be_bytes([req[0], req[1]]);
                        let mut body = req[4..8].to_vec(); // the correlation id
                        match key {
                            codec::FIND_COORDINATOR => {
                                body.extend_from_slice(&0i32.to_be_bytes()); // throttle
                                body.extend_from_slice(&0i16.to_be_bytes()); // error
                                body.extend_from_slice(&(-1i16).to_be_bytes()); // message
                                body.extend_from_slice(&1i32.to_be_bytes()); // node id
                                let host = addr.ip().to_string();
                                body.extend_from_slice(&(host.len() as i16).to_be_bytes());
                                body.extend_from_slice(host.as_bytes());
                                body.extend_from_slice(&i32::from(addr.port()).to_be_bytes());
                            }
                            _ => {
                                body.extend_from_slice(&1i32.to_be_bytes()); // topics
                                body.extend_from_slice(&1i16.to_be_bytes());
                                body.push(b't');
                                body.extend_from_slice(&1i32.to_be_bytes()); // partitions
                                body.extend_from_slice(&0i32.to_be_bytes()); // partition
                                body.extend_from_slice(&7i64.to_be_bytes()); // offset
                                body.extend_from_slice(&(-1i16).to_be_bytes()); // metadata
                                body.extend_from_slice(&0i16.to_be_bytes()); // error
                                body.extend_from_slice(&0i16.to_be_bytes()); // group error
                            }
                        }
                        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
                        frame.extend_from_slice(&body);
                        if c.write_all(&frame).await.is_err() || key != codec::FIND_COORDINATOR {
                            return;
                        }
                    }
                });
            }
        });
        (addr.to_string(), task)
    }

    /// A request on a kept connection the broker has closed meanwhile is sent again on a
    /// new one, instead of failing the bridge's session.
    #[tokio::test]
    async fn a_closed_coordinator_connection_is_replaced() {
        let (addr, _server) = fake_coordinator().await;
        let secure = super::super::security::Secure::plain();
        let mut g = Group::new(&[addr], "g", "test", Duration::from_secs(5), secure);
        let topics = [("t".to_string(), vec![0])];
        for _ in 0..3 {
            let got = g.fetch(&topics).await.unwrap();
            assert_eq!(got.get(&("t".to_string(), 0)), Some(&7));
            // Let the server's close reach us before the next request.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
