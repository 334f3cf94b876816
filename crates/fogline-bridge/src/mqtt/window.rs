//! The records of one connection that were handed to the MQTT client and are not yet done,
//! and from them the bridge's position: the oldest offset not done.
//!
//! The client (rumqttc) numbers a publish when it writes it and reports each write in
//! request order (`Outgoing::Publish(pkid)`, 0 for QoS 0), so the n-th report is the n-th
//! record handed over. A QoS 0 record is done once written; a QoS 1 record once its PUBACK
//! names its packet id. Records the bridge reads and does not send (no line carries them
//! out, or they came in through this bridge) are done at once.

use std::collections::{BTreeSet, HashMap, VecDeque};

/// A record handed over: its stream offset and payload size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sent {
    /// Stream offset.
    pub offset: u64,
    /// Payload bytes.
    pub bytes: u64,
}

/// See the [module docs](self).
#[derive(Debug)]
pub struct Window {
    /// Handed over, not yet written.
    queued: VecDeque<Sent>,
    /// Written at QoS 1, waiting for the PUBACK of their packet id.
    by_pkid: HashMap<u16, Sent>,
    /// Offsets not done.
    open: BTreeSet<u64>,
    /// The next offset to read: every one before it is done or open.
    next: u64,
}

impl Window {
    /// An empty window that reads on from `from`.
    pub fn new(from: u64) -> Self {
        Window {
            queued: VecDeque::new(),
            by_pkid: HashMap::new(),
            open: BTreeSet::new(),
            next: from,
        }
    }

    /// Records handed over and not done.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// The next offset to read.
    pub fn next(&self) -> u64 {
        self.next
    }

    /// The position: every record before it is done.
    pub fn done_until(&self) -> u64 {
        self.open.first().copied().unwrap_or(self.next)
    }

    /// A record handed to the client.
    pub fn send(&mut self, sent: Sent) {
        self.queued.push_back(sent);
        self.open.insert(sent.offset);
        self.next = self.next.max(sent.offset + 1);
    }

    /// Records up to `offset` (excluded) were read; those not sent are done.
    pub fn read_to(&mut self, offset: u64) {
        self.next = self.next.max(offset);
    }

    /// The client wrote the oldest record handed over, with packet id `pkid`. Returns it
    /// when that made it done (QoS 0).
    ///
    /// # Errors
    /// A write nobody asked for, or a packet id still in flight.
    pub fn written(&mut self, pkid: u16) -> Result<Option<Sent>, String> {
        let sent = self
            .queued
            .pop_front()
            .ok_or_else(|| format!("the MQTT client wrote a publish ({pkid}) it was not given"))?;
        if pkid == 0 {
            self.open.remove(&sent.offset);
            return Ok(Some(sent));
        }
        if self.by_pkid.insert(pkid, sent).is_some() {
            return Err(format!("packet id {pkid} reused while in flight"));
        }
        Ok(None)
    }

    /// The remote acknowledged `pkid`: its record is done.
    ///
    /// # Errors
    /// A PUBACK for no publish in flight.
    pub fn acked(&mut self, pkid: u16) -> Result<Sent, String> {
        let sent = self
            .by_pkid
            .remove(&pkid)
            .ok_or_else(|| format!("PUBACK for packet id {pkid}, which is not in flight"))?;
        self.open.remove(&sent.offset);
        Ok(sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(offset: u64) -> Sent {
        Sent { offset, bytes: 10 }
    }

    #[test]
    fn the_position_waits_for_the_oldest_puback() {
        let mut w = Window::new(5);
        w.send(s(5));
        w.send(s(6));
        w.read_to(8); // offset 7 was not for this bridge
        w.send(s(8));
        assert_eq!((w.len(), w.done_until(), w.next()), (3, 5, 9));
        assert_eq!(w.written(1).unwrap(), None);
        assert_eq!(w.written(2).unwrap(), None);
        assert_eq!(w.written(3).unwrap(), None);
        // Acknowledged out of order: the position moves only past a done prefix.
        assert_eq!(w.acked(2).unwrap(), s(6));
        assert_eq!(w.done_until(), 5);
        w.acked(1).unwrap();
        assert_eq!(w.done_until(), 8);
        w.acked(3).unwrap();
        assert_eq!((w.done_until(), w.is_empty()), (9, true));
    }

    #[test]
    fn qos_0_is_done_once_written() {
        let mut w = Window::new(0);
        w.send(s(0));
        w.send(s(1));
        assert_eq!(w.written(0).unwrap(), Some(s(0)));
        assert_eq!(w.done_until(), 1);
        assert_eq!(w.written(7).unwrap(), None);
        assert_eq!(w.done_until(), 1);
    }

    #[test]
    fn surprises_from_the_client_are_errors() {
        let mut w = Window::new(0);
        assert!(w.written(1).is_err());
        assert!(w.acked(1).is_err());
        w.send(s(0));
        w.send(s(1));
        w.written(4).unwrap();
        assert!(w.written(4).unwrap_err().contains("reused"));
    }
}
