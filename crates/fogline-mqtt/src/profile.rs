//! Associative Rendezvous over MQTT (`docs/PROFILES.md`, "Over MQTT").
//!
//! - **Interest on SUBSCRIBE**: an MQTT 5 SUBSCRIBE with a user property
//!   [`INTEREST_PROPERTY`] subscribes each of its filters with that interest (terms only:
//!   the filter is the topic), so it gets only the records whose data profile (their user
//!   properties, as headers) satisfies it. [`subscribe_interest`] reads it; the session
//!   keeps its canonical text in `SubRecord::interest`.
//! - **notify_interest**: a PUBLISH to [`ANNOUNCE_PREFIX`]`<topic>` whose payload is a data
//!   profile registers the connection as a producer of it on `<topic>` (an empty payload
//!   withdraws); the client is then told on [`NOTIFY_PREFIX`]`<topic>`, `start` or `stop`,
//!   whether anybody wants it ([`Announced`]). Such PUBLISHes are control messages, never
//!   routed; a client's PUBLISH to [`NOTIFY_PREFIX`] is refused, so a notice always comes
//!   from the server.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use fogline_broker::BrokerError;
use fogline_profile::{DataProfile, Interest};
use fogline_wire::Str;

use crate::codec::{Properties, QoS};
use crate::message::Message;
use crate::session::{Outgoing, Session};
use crate::shared::split_shared;

/// The SUBSCRIBE user property that holds an interest profile.
pub const INTEREST_PROPERTY: &str = "fogline-interest";
/// PUBLISHes to `$fogline/announce/<topic>` announce (or withdraw) a producer on `<topic>`.
pub const ANNOUNCE_PREFIX: &str = "$fogline/announce/";
/// The server tells an announced producer on `$fogline/notify/<topic>`.
pub const NOTIFY_PREFIX: &str = "$fogline/notify/";
/// The notice payload when somebody is interested.
pub const START: &[u8] = b"start";
/// The notice payload when nobody is.
pub const STOP: &[u8] = b"stop";

/// The interest of a SUBSCRIBE, in canonical text form: `Ok(None)` without the property
/// or when it has no terms (a plain subscription).
///
/// # Errors
/// Why it is refused: given twice, malformed, or with an `@topic` term (the SUBSCRIBE's
/// filter is the topic).
pub(crate) fn subscribe_interest(props: &Properties) -> Result<Option<String>, String> {
    let mut given = props
        .user
        .iter()
        .filter(|(k, _)| &**k == INTEREST_PROPERTY)
        .map(|(_, v)| v);
    let Some(text) = given.next() else {
        return Ok(None);
    };
    if given.next().is_some() {
        return Err(format!("{INTEREST_PROPERTY} given more than once"));
    }
    let interest = Interest::parse_terms(text)
        .map_err(|e| format!("{INTEREST_PROPERTY} is malformed: {e}"))?;
    Ok((!interest.terms.is_empty()).then(|| interest.to_string()))
}

/// The interest a session's subscription record holds, for the broker.
///
/// # Errors
/// [`BrokerError::Invalid`] when it does not parse (a journal of a later grammar).
pub(crate) fn parse_recorded(text: Option<&str>) -> Result<Option<Interest>, BrokerError> {
    text.map(|t| {
        Interest::parse(t).map_err(|e| BrokerError::Invalid(format!("interest {t:?}: {e}")))
    })
    .transpose()
}

/// Whether a message's data profile (its user properties) satisfies `interest`, as the
/// broker decides for records: for the retained messages a SUBSCRIBE with an interest gets.
pub(crate) fn satisfies(interest: &Interest, m: &Message) -> bool {
    let Ok(block) = m.headers() else {
        return false;
    };
    interest.matches(&DataProfile::from_header_block(&block), &m.topic)
}

/// What a PUBLISH to [`ANNOUNCE_PREFIX`] asks.
#[derive(Debug)]
pub(crate) enum Announce {
    /// Register a producer of this profile on the topic.
    Set(String, DataProfile),
    /// Withdraw the one on the topic.
    Withdraw(String),
}

/// Why an announcement is refused, with the PUBACK/PUBREC reason code (MQTT 5).
#[derive(Debug)]
pub(crate) struct Refusal {
    pub reason: u8,
    pub why: String,
}

impl Refusal {
    fn new(reason: u8, why: impl Into<String>) -> Refusal {
        Refusal {
            reason,
            why: why.into(),
        }
    }
}

/// Reads an announcement: `topic` is what follows [`ANNOUNCE_PREFIX`].
///
/// # Errors
/// 0x90 (topic name invalid) for an empty or invalid topic, 0x99 (payload format invalid)
/// for a payload that is no data profile in text form.
pub(crate) fn read_announce(topic: &str, payload: &[u8]) -> Result<Announce, Refusal> {
    if let Err(e) = fogline_wire::validate_topic(topic) {
        return Err(Refusal::new(0x90, format!("announced topic: {e}")));
    }
    if payload.is_empty() {
        return Ok(Announce::Withdraw(topic.to_string()));
    }
    let text = std::str::from_utf8(payload)
        .map_err(|_| Refusal::new(0x99, "the data profile is not UTF-8"))?;
    let profile = DataProfile::parse(text)
        .map_err(|e| Refusal::new(0x99, format!("malformed data profile: {e}")))?;
    Ok(Announce::Set(topic.to_string(), profile))
}

/// A connection's announcements, by topic; each lives until withdrawn or replaced, or the
/// connection ends (this is dropped with it).
#[derive(Default)]
pub(crate) struct Announced(HashMap<String, Watcher>);

/// The task that follows one announcement; dropping it withdraws the announcement.
struct Watcher {
    task: tokio::task::AbortHandle,
    /// Cleared when dropped, read under the session lock before a notice is queued: a task
    /// being aborted may be running on another thread, and must not queue a notice after
    /// its successor's.
    live: Arc<AtomicBool>,
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.live.store(false, Ordering::Release);
        self.task.abort();
    }
}

impl Announced {
    /// Registers (or replaces) the producer on `topic` and queues the first notice with the
    /// current state; later ones follow every change. `limit`: most announcements a
    /// connection holds.
    ///
    /// # Errors
    /// 0x97 (quota exceeded) past `limit`, 0x90 for a topic the broker refuses.
    pub fn set(
        &mut self,
        broker: &fogline_broker::Broker,
        session: &Arc<Session>,
        conn_id: u64,
        (topic, profile): (String, DataProfile),
        limit: usize,
    ) -> Result<(), Refusal> {
        if !self.0.contains_key(&topic) && self.0.len() >= limit {
            return Err(Refusal::new(
                0x97,
                "too many announcements on this connection",
            ));
        }
        // The old one goes first: its watcher may not queue a notice after the new one's.
        self.0.remove(&topic);
        let mut announcement = broker
            .announce(&topic, profile, session.origin)
            .map_err(|e| Refusal::new(0x90, e.to_string()))?;
        let notice = Str::from(format!("{NOTIFY_PREFIX}{topic}"));
        let live = Arc::new(AtomicBool::new(true));
        let mut told = announcement.interested();
        tell(session, (conn_id, &live), &notice, told);
        let session = Arc::downgrade(session);
        let alive = live.clone();
        let task = tokio::spawn(async move {
            loop {
                let on = announcement.changed().await;
                if on == told {
                    continue; // changes in quick succession seen as one
                }
                told = on;
                let Some(session) = session.upgrade() else {
                    return;
                };
                if !tell(&session, (conn_id, &alive), &notice, on) {
                    return; // the connection is gone; so is the announcement
                }
            }
        });
        self.0.insert(
            topic,
            Watcher {
                task: task.abort_handle(),
                live,
            },
        );
        Ok(())
    }

    /// Withdraws the producer on `topic`, if any.
    pub fn withdraw(&mut self, topic: &str) {
        self.0.remove(topic);
    }

    /// Withdraws every announcement as the connection ends, and drops their notices not
    /// sent yet from the session (which may outlive the connection).
    pub fn end(&mut self, session: &Session) {
        if self.0.is_empty() {
            return;
        }
        self.0.clear();
        let mut st = session.state.lock();
        st.pending.retain(|o| !is_notice(o));
    }
}

/// A notice [`tell`] queued.
fn is_notice(o: &Outgoing) -> bool {
    o.qos == QoS::AtMostOnce
        && o.msg.topic.starts_with(NOTIFY_PREFIX)
        && o.msg.props.is_empty()
        && (o.msg.payload == START || o.msg.payload == STOP)
}

/// Queues a notice (QoS 0, not retained) for the client if it has a subscription matching
/// `notice`, with their subscription ids. A notice not yet sent is updated rather than
/// followed by another, so a client that does not read holds one per announcement. False,
/// and nothing queued, once connection `conn_id` is no longer attached or the announcement
/// not `live`.
fn tell(session: &Session, (conn_id, live): (u64, &AtomicBool), notice: &Str, on: bool) -> bool {
    let mut st = session.state.lock();
    if !live.load(Ordering::Acquire) || st.conn.as_ref().map(|h| h.id) != Some(conn_id) {
        return false;
    }
    let mut matched = false;
    let mut sub_ids = Vec::new();
    for e in st.subs.values() {
        // Shared subscriptions and those with an interest never match: a notice is for
        // this client alone and has no data profile.
        let plain = split_shared(&e.rec.key).is_none() && e.rec.interest.is_none();
        if plain && fogline_wire::filter_matches(&e.rec.key, notice) {
            matched = true;
            sub_ids.extend(e.rec.sub_id);
        }
    }
    if !matched {
        return true;
    }
    sub_ids.sort_unstable();
    let payload = Bytes::from_static(if on { START } else { STOP });
    let unsent = st
        .pending
        .iter_mut()
        .find(|o| o.msg.topic == *notice && is_notice(o));
    match unsent {
        Some(o) => {
            o.msg.payload = payload;
            o.sub_ids = sub_ids;
        }
        None => {
            let seq = st.next_seq;
            st.next_seq += 1;
            st.pending.push_back(Outgoing {
                seq,
                msg: Message {
                    topic: notice.clone(),
                    payload,
                    qos: QoS::AtMostOnce,
                    retain: false,
                    props: Default::default(),
                    received: fogline_broker::now_micros(),
                },
                qos: QoS::AtMostOnce,
                retain: false,
                sub_ids,
                pkid: 0,
                released: false,
                resend: false,
            });
        }
    }
    drop(st);
    session.waker.notify_one();
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(values: &[&str]) -> Properties {
        Properties {
            user: values
                .iter()
                .map(|v| (INTEREST_PROPERTY.into(), (*v).into()))
                .collect(),
            ..Properties::default()
        }
    }

    #[test]
    fn a_subscribe_interest_is_read_in_canonical_form_or_refused() {
        assert_eq!(subscribe_interest(&Properties::default()), Ok(None));
        assert_eq!(subscribe_interest(&with(&["  "])), Ok(None), "no terms");
        assert_eq!(
            subscribe_interest(&with(&[" sensor=li*   alt=100..500 "])),
            Ok(Some("sensor=li* alt=100..500".into()))
        );
        for bad in [&["sensor=li* @a/b"][..], &["alt=5..1"], &["a", "b"]] {
            let e = subscribe_interest(&with(bad)).expect_err("refused");
            assert!(e.starts_with(INTEREST_PROPERTY), "{e}");
        }
    }

    #[test]
    fn an_announce_reads_a_profile_or_a_withdrawal() {
        assert!(matches!(
            read_announce("site/nj/lidar", b"type=drone sensor=lidar"),
            Ok(Announce::Set(t, p)) if t == "site/nj/lidar" && p.get("sensor") == Some(Some("lidar"))
        ));
        assert!(matches!(read_announce("a", b""), Ok(Announce::Withdraw(t)) if t == "a"));
        for (topic, payload, reason) in [
            ("", &b"a=1"[..], 0x90),
            ("a/+", b"a=1", 0x90),
            ("a", b"a=", 0x99),
            ("a", b"\xff", 0x99),
        ] {
            let e = read_announce(topic, payload).expect_err("refused");
            assert_eq!(e.reason, reason, "{topic:?} {payload:?}: {}", e.why);
        }
    }
}
