//! Packets from the client: PUBLISH (those to control topics go to `control`) and its
//! acknowledgements, SUBSCRIBE, UNSUBSCRIBE, PINGREQ, DISCONNECT.

use fogline_broker::BrokerError;
use fogline_wire::Str;

use super::acks::journal_failed;
use super::{Conn, End};
use crate::codec::{
    Ack, Disconnect, Packet, Properties, Publish, QoS, SubAck, Subscribe, Unsubscribe, Version,
};
use crate::message::Message;
use crate::profile;
use crate::session::{qos_of, Session, SubEntry, Write};
use crate::shared::split_shared;
use crate::store::entry::{Entry, SubRecord};

impl Conn {
    pub(super) async fn handle(&mut self, p: Packet) -> Result<(), End> {
        if !self.acks.is_empty() && !matches!(&p, Packet::Publish(pb) if pb.qos != QoS::AtMostOnce)
        {
            // Nothing overtakes a QoS 1 or 2 message that waits for its flush.
            self.drain_acks().await?;
        }
        match p {
            Packet::Publish(p) => return self.on_publish(p).await,
            Packet::PubAck(a) => self.on_puback(&a, false),
            Packet::PubComp(a) => self.on_puback(&a, true),
            Packet::PubRec(a) => self.on_pubrec(&a),
            Packet::PubRel(a) => return self.on_pubrel(&a),
            Packet::Subscribe(s) => return self.on_subscribe(s),
            Packet::Unsubscribe(u) => return self.on_unsubscribe(u),
            Packet::PingReq => self.send(&Packet::PingResp), // [MQTT-3.12.4-1]
            Packet::Disconnect(d) => return Err(self.on_disconnect(&d)),
            Packet::Connect(_) => return Err(End::error(0x82, "second CONNECT")), // [MQTT-3.1.0-2]
            Packet::Auth(_) => {
                return Err(End::error(0x82, "AUTH without an authentication method"))
            }
            Packet::ConnAck(_) | Packet::SubAck(_) | Packet::UnsubAck(_) | Packet::PingResp => {
                return Err(End::error(0x82, "packet only a server sends"));
            }
        }
        Ok(())
    }

    fn resolve_topic(&mut self, p: &Publish) -> Result<Str, End> {
        let Some(alias) = p.props.topic_alias else {
            if p.topic.is_empty() {
                return Err(End::error(0x82, "empty topic name without a topic alias"));
            }
            return Ok(p.topic.clone());
        };
        let max = self.shared.config.topic_alias_maximum;
        if alias == 0 || alias > max {
            return Err(End::error(0x94, "topic alias out of range")); // [MQTT-3.3.2-8], [MQTT-3.3.2-9]
        }
        if p.topic.is_empty() {
            self.aliases
                .get(&alias)
                .cloned()
                .ok_or_else(|| End::error(0x82, "unknown topic alias"))
        } else {
            self.aliases.insert(alias, p.topic.clone());
            Ok(p.topic.clone())
        }
    }

    async fn on_publish(&mut self, p: Publish) -> Result<(), End> {
        let topic = self.resolve_topic(&p)?;
        if fogline_wire::validate_topic(&topic).is_err() {
            return Err(End::error(0x90, "invalid topic name")); // [MQTT-3.3.2-2]
        }
        if invalid_response_topic(&p.props) {
            // Never forwarded with wildcards [MQTT-3.3.2-14].
            return Err(End::error(0x82, "invalid response topic"));
        }
        if p.qos == QoS::ExactlyOnce {
            if self
                .acks
                .count(|&(id, q)| id == p.pkid && q == QoS::ExactlyOnce)
                > 0
            {
                // A redelivery of a message still waiting for its flush: once answered, it is
                // in `qos2_in` and recognised below.
                self.drain_acks().await?;
            }
            let st = self.session.state.lock();
            if st.qos2_in.contains(&p.pkid) {
                drop(st);
                // A redelivery of a message already received: acknowledge, do not publish again [MQTT-4.3.3-9].
                self.send(&Packet::PubRec(Ack::ok(p.pkid)));
                return Ok(());
            }
            let waiting = self.acks.count(|&(_, q)| q == QoS::ExactlyOnce);
            if st.qos2_in.len() + waiting >= usize::from(self.shared.config.receive_maximum.max(1))
            {
                return Err(End::error(0x93, "receive maximum exceeded")); // [MQTT-3.3.4-7]
            }
        }
        if topic.starts_with(profile::ANNOUNCE_PREFIX) || topic.starts_with(profile::NOTIFY_PREFIX)
        {
            self.client
                .count_in(1, (topic.len() + p.payload.len()) as u64);
            return self.on_control(&p, &topic).await;
        }
        if !self.access.may_publish(&topic) {
            if p.qos == QoS::AtMostOnce {
                return Ok(());
            }
            let refused = Err(BrokerError::NotAuthorized(format!(
                "may not publish to {topic:?}"
            )));
            if let Some(((pkid, qos), now)) = self.acks.push((p.pkid, p.qos), refused) {
                return self.answer(pkid, qos, now, self.handoff).await;
            }
            return Ok(());
        }
        let msg = Message::from_publish(&p, topic, fogline_broker::now_micros());
        self.client
            .count_in(1, (msg.topic.len() + msg.payload.len()) as u64);
        if p.qos == QoS::AtMostOnce {
            let result = self
                .shared
                .publish(&msg, self.session.origin, false, self.handoff)
                .await;
            if let Err(e) = result {
                tracing::debug!(error = %e, "QoS 0 publish failed");
            }
            return Ok(());
        }
        // Answered once durable, in order (see `acks`).
        let stored = self.shared.store_acked(&msg, self.session.origin);
        if let Some(((pkid, qos), now)) = self.acks.push((p.pkid, p.qos), stored) {
            return self.answer(pkid, qos, now, self.handoff).await;
        }
        Ok(())
    }

    /// PUBACK (QoS 1) or PUBCOMP (QoS 2, after PUBREL) ends a delivery.
    fn on_puback(&mut self, a: &Ack, comp: bool) {
        let session = self.session.clone();
        let mut st = session.state.lock();
        let pos = st.inflight.iter().position(|o| {
            o.pkid == a.pkid
                && if comp {
                    o.qos == QoS::ExactlyOnce && o.released
                } else {
                    o.qos == QoS::AtLeastOnce
                }
        });
        if let Some(i) = pos {
            if let Some(o) = st.inflight.remove(i) {
                st.resends -= usize::from(o.resend);
                st.mark_pkid(a.pkid, false);
                session.journal_done(&self.shared, &mut st, o.seq);
            }
        }
    }

    fn on_pubrec(&mut self, a: &Ack) {
        let session = self.session.clone();
        let mut st = session.state.lock();
        let pos = st
            .inflight
            .iter()
            .position(|o| o.pkid == a.pkid && o.qos == QoS::ExactlyOnce);
        let Some(i) = pos else {
            drop(st);
            let mut rel = Ack::ok(a.pkid);
            rel.reason = if self.version == Version::V5 { 0x92 } else { 0 };
            self.send(&Packet::PubRel(rel));
            return;
        };
        let seq = st.inflight[i].seq;
        if std::mem::take(&mut st.inflight[i].resend) {
            st.resends -= 1; // answered before it was sent again: nothing to resend
        }
        if a.reason >= 0x80 {
            // The receiver refused the message: the delivery ends here.
            st.inflight.remove(i);
            st.mark_pkid(a.pkid, false);
            session.journal_done(&self.shared, &mut st, seq);
            return;
        }
        if !st.inflight[i].released {
            st.inflight[i].released = true;
            // Not written, a restart sends the PUBLISH again rather than the PUBREL.
            let _ = session.journal(
                &self.shared,
                &mut st,
                Entry::MsgRel {
                    client: &session.client_id,
                    seq,
                },
                Write::BestEffort,
            );
        }
        drop(st);
        self.send(&Packet::PubRel(Ack::ok(a.pkid))); // [MQTT-4.3.3-4]
    }

    fn on_pubrel(&mut self, a: &Ack) -> Result<(), End> {
        let session = self.session.clone();
        let mut st = session.state.lock();
        let known = st.qos2_in.remove(&a.pkid);
        if known {
            let entry = Entry::Qos2Done {
                client: &session.client_id,
                pkid: a.pkid,
            };
            if session
                .journal(&self.shared, &mut st, entry, Write::Required)
                .is_err()
            {
                // Answered, the client may reuse the id at once, and a restart would take
                // its next message for a redelivery and drop it. Unanswered, it sends the
                // PUBREL again on its next connection.
                st.qos2_in.insert(a.pkid);
                return Err(journal_failed());
            }
        }
        drop(st);
        let mut comp = Ack::ok(a.pkid);
        if !known && self.version == Version::V5 {
            comp.reason = 0x92; // packet identifier not found
        }
        self.send(&Packet::PubComp(comp)); // [MQTT-4.3.3-11]
        Ok(())
    }

    fn on_subscribe(&mut self, s: Subscribe) -> Result<(), End> {
        // The retained copies it queues are journaled too: any failure withholds the SUBACK.
        let failures = self.shared.journal_failures();
        let sub_id = s.props.subscription_ids.first().copied();
        let now = fogline_broker::now_micros();
        let session = self.session.clone();
        // MQTT 5 only (3.1.1 has no properties): refused, every filter is.
        let interest = profile::subscribe_interest(&s.props);
        let mut reasons = Vec::new();
        if let Err(why) = &interest {
            tracing::warn!(client = %session.client_id, "subscription refused: {why}");
            reasons.push(why.clone());
        }
        let mut st = session.state.lock();
        let mut codes = Vec::with_capacity(s.filters.len());
        for f in &s.filters {
            let Ok(interest) = &interest else {
                codes.push(0x83); // implementation specific error
                continue;
            };
            let key = f.filter.to_string();
            let (group, filter) = match split_shared(&key) {
                Some((g, flt)) => (g, flt),
                None if key.starts_with("$share/") || key == "$share" => {
                    codes.push(invalid_filter(self.version));
                    continue;
                }
                None => (None, key.as_str()),
            };
            let bad_group = group.is_some_and(|g| g.is_empty() || g.contains(['+', '#']));
            if bad_group || fogline_wire::validate_filter(filter).is_err() {
                codes.push(invalid_filter(self.version)); // [MQTT-4.8.2-2]
                continue;
            }
            if !self.access.may_subscribe(filter) {
                reasons.push(format!("{key}: not authorized"));
                codes.push(not_authorized(self.version));
                continue;
            }
            if group.is_some() && f.no_local {
                // [MQTT-3.8.3-4] (5.0); the filters before it were applied: journal them
                // (the connection ends either way).
                if Session::durable(&self.shared, &st) {
                    let _ = session.journal_session(&self.shared, &mut st);
                }
                return Err(End::error(0x82, "no local on a shared subscription"));
            }
            if group.is_some() && interest.is_some() {
                // The broker routes by interest to every such subscription, not to one
                // member of a group.
                reasons.push(format!("{key}: no interest on a shared subscription"));
                codes.push(0x9E); // shared subscriptions not supported
                continue;
            }
            let rec = SubRecord {
                key: key.clone(),
                qos: f.qos as u8,
                no_local: f.no_local,
                retain_as_published: f.retain_as_published,
                retain_handling: f.retain_handling,
                sub_id,
                interest: interest.clone(),
            };
            let full = st.subs.len() >= self.shared.config.max_subscriptions;
            let same_interest = st.subs.get(&key).map(|e| e.rec.interest == rec.interest);
            let is_new = match st.subs.get_mut(&key) {
                // [MQTT-3.8.4-3] replace the options in place: what the old subscription
                // queued is delivered, nothing is lost [MQTT-3.8.4-4].
                Some(e) if same_interest == Some(true) => {
                    e.sub.set_no_local(rec.no_local);
                    e.rec = rec.clone();
                    false
                }
                // Another interest: a new broker subscription, after what the old one
                // queued (see `Shared::resubscribe`).
                Some(_) => match self.shared.resubscribe(&session, &mut st, rec.clone()) {
                    Ok(()) => false,
                    Err(e) => {
                        tracing::warn!(error = %e, "subscribe failed");
                        codes.push(0x80);
                        continue;
                    }
                },
                None if full => {
                    tracing::warn!(client = %session.client_id, filter = key, max = self.shared.config.max_subscriptions, "subscription refused: the session holds max_subscriptions");
                    codes.push(quota_exceeded(self.version));
                    continue;
                }
                None => match self.shared.broker_subscribe(&session, &rec) {
                    Ok(sub) => {
                        st.subs.insert(key.clone(), SubEntry::new(sub, rec.clone()));
                        true
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "subscribe failed");
                        codes.push(0x80);
                        continue;
                    }
                },
            };
            codes.push(f.qos as u8); // [MQTT-3.9.3-1] granted QoS, in order
            let send_retained = group.is_none()
                && (rec.retain_handling == 0 || (rec.retain_handling == 1 && is_new));
            if send_retained {
                let mut skipped = 0usize;
                // Recorded in canonical form: it parses.
                let wanted = profile::parse_recorded(rec.interest.as_deref()).unwrap_or(None);
                for m in self.shared.retained.matching(filter, now) {
                    if wanted.as_ref().is_some_and(|i| !profile::satisfies(i, &m)) {
                        continue;
                    }
                    if !self.access.may_read(&m.topic) {
                        continue;
                    }
                    let qos = m.qos.min(qos_of(rec.qos));
                    // [MQTT-3.3.1-6], up to the session's max_queued.
                    if !session.enqueue(&self.shared, &mut st, m, qos, sub_id) {
                        skipped += 1;
                    }
                }
                if skipped > 0 {
                    tracing::warn!(client = %session.client_id, filter, skipped, "retained messages not sent: the session holds max_queued messages");
                }
            }
        }
        if Session::durable(&self.shared, &st) {
            // Unanswered, the client subscribes again on its next connection; the
            // subscriptions stay live meanwhile (a later journal entry of the session or a
            // compaction writes them).
            if session.journal_session(&self.shared, &mut st).is_err()
                || self.shared.journal_failures() != failures
            {
                return Err(journal_failed());
            }
        }
        drop(st);
        let ack = SubAck {
            pkid: s.pkid, // [MQTT-3.8.4-2]
            props: Default::default(),
            codes,
        };
        let ack = self.with_reasons(ack, &reasons);
        self.send(&Packet::SubAck(ack));
        Ok(())
    }

    /// `ack` with a Reason String of `reasons` (MQTT 5), unless the client asked for no
    /// problem information [MQTT-3.1.2-29] or it would pass the client's Maximum Packet
    /// Size [MQTT-3.9.2-1].
    fn with_reasons(&self, ack: SubAck, reasons: &[String]) -> SubAck {
        if reasons.is_empty() || !self.problem_info || self.version != Version::V5 {
            return ack;
        }
        let props = Properties {
            reason_string: Some(reasons.join("; ").into()),
            ..Properties::default()
        };
        let with = Packet::SubAck(SubAck {
            props: props.into(),
            ..ack.clone()
        });
        let mut b = bytes::BytesMut::new();
        let fits = crate::codec::encode(&with, self.version, &mut b)
            .is_ok_and(|()| b.len() <= self.client_max_packet);
        match with {
            Packet::SubAck(with) if fits => with,
            _ => ack,
        }
    }

    fn on_unsubscribe(&mut self, u: Unsubscribe) -> Result<(), End> {
        let session = self.session.clone();
        let mut st = session.state.lock();
        let mut codes = Vec::with_capacity(u.filters.len());
        for f in &u.filters {
            match st.subs.remove(f.as_str()) {
                Some(e) => {
                    // [MQTT-3.10.4-2]; what its queue held goes with it, journaled or not.
                    self.shared.broker.unsubscribe(&e.sub);
                    session.forget_persisted(&self.shared, &mut st, &e);
                    codes.push(0x00);
                }
                None => codes.push(0x11), // no subscription existed
            }
        }
        // Unanswered, the client unsubscribes again on its next connection.
        if Session::durable(&self.shared, &st)
            && session.journal_session(&self.shared, &mut st).is_err()
        {
            return Err(journal_failed());
        }
        drop(st);
        self.send(&Packet::UnsubAck(SubAck {
            pkid: u.pkid, // [MQTT-3.10.4-4]
            props: Default::default(),
            codes,
        }));
        Ok(())
    }

    fn on_disconnect(&mut self, d: &Disconnect) -> End {
        if let Some(e) = d.props.session_expiry {
            if self.connect_expiry == 0 && e != 0 {
                return End::error(0x82, "session expiry raised from 0 at DISCONNECT");
                // [MQTT-3.14.2-2]
            }
            let session = self.session.clone();
            let mut st = session.state.lock();
            session.set_expiry(&mut st, e.min(self.shared.config.max_session_expiry));
            // Not written: a crash keeps the expiry it had (the connection ends anyway).
            let _ = session.journal_session(&self.shared, &mut st);
        }
        // Only 0x00 (normal disconnection) deletes the will; 0x04 and the
        // error codes keep it [MQTT-3.1.2-8], [MQTT-3.14.4-3].
        End::Client {
            will: d.reason != 0x00,
        }
    }
}

/// A Response Topic that is no valid topic name (wildcards, empty).
pub(super) fn invalid_response_topic(props: &crate::codec::Properties) -> bool {
    props
        .response_topic
        .as_ref()
        .is_some_and(|t| fogline_wire::validate_topic(t).is_err())
}

/// The SUBACK code for a filter the ACL refuses: 0x87 not authorized (5.0), the plain
/// failure 0x80 in 3.1.1.
fn not_authorized(v: Version) -> u8 {
    match v {
        Version::V4 => 0x80,
        Version::V5 => 0x87,
    }
}

fn invalid_filter(v: Version) -> u8 {
    match v {
        Version::V4 => 0x80,
        Version::V5 => 0x8F,
    }
}

/// The SUBACK code for a filter past `max_subscriptions`: 0x97 quota exceeded (5.0), the
/// plain failure 0x80 in 3.1.1 [MQTT-3.9.3-2].
fn quota_exceeded(v: Version) -> u8 {
    match v {
        Version::V4 => 0x80,
        Version::V5 => 0x97,
    }
}
