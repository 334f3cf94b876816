//! Durable consumers' positions (kept in memory and written by the stream's position
//! writer) and the table of the consumers open on a stream, which the admin API lists.
//!
//! A durable consumer is bound to the user who first opens it (a client logged in to a node
//! that authenticates; not anonymous clients or the node's own components): its owner is
//! saved with its position at once, and a client logged in as anyone else may not open it,
//! as an MQTT session may not be taken over by another user. One without an owner (opened
//! anonymously, or saved before owners were kept) is bound to the next logged-in user who
//! opens it. The rules' consumers (`rule.<id>`) are the node's: no client may open them.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use super::Stream;
use crate::config::StorageMode;
use crate::consumer::{Opener, RULE_CONSUMER_PREFIX};
use crate::error::BrokerError;
use crate::positions::{Positions, Saved};

/// The durable consumers of a stream and every consumer open on it.
pub(crate) struct Durables {
    /// Each durable consumer's acknowledged floor (loaded at open, updated as it acks).
    floors: HashMap<String, u64>,
    /// The user each bound consumer belongs to.
    owners: HashMap<String, Arc<str>>,
    /// Durable consumers open now.
    open: HashSet<String>,
    /// Redeliveries of each durable consumer since the node started (kept across closes).
    redelivered: HashMap<String, u64>,
    /// Every open consumer, durable or ephemeral, by its id.
    live: HashMap<u64, Arc<ConsumerState>>,
    next_id: u64,
}

impl Durables {
    pub(crate) fn new(saved: HashMap<String, Saved>) -> Durables {
        let owners = saved
            .iter()
            .filter_map(|(name, s)| Some((name.clone(), s.owner.clone()?)))
            .collect();
        Durables {
            floors: saved.into_iter().map(|(name, s)| (name, s.floor)).collect(),
            owners,
            open: HashSet::new(),
            redelivered: HashMap::new(),
            live: HashMap::new(),
            next_id: 1,
        }
    }
}

/// What an open consumer reports of itself, as it polls and acks (relaxed atomics: a
/// reader sees each figure as of some recent moment).
#[derive(Debug)]
pub(crate) struct ConsumerState {
    pub id: u64,
    pub name: Option<String>,
    pub filter: Option<String>,
    pub opened_at_us: u64,
    /// The next offset it reads.
    pub cursor: AtomicU64,
    /// Every record below it was acked (or filtered out).
    pub floor: AtomicU64,
    /// Records handed out and not acked yet.
    pub pending: AtomicU64,
    /// Records handed out for the first time.
    pub delivered: AtomicU64,
    /// Records handed out again after their ack timeout.
    pub redelivered: AtomicU64,
}

/// One consumer of a stream, as the admin API and `fogline consumer` show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerInfo {
    /// The stream it reads.
    pub stream: String,
    /// Its durable name; `None` for an ephemeral consumer.
    pub name: Option<String>,
    /// Whether a client has it open now.
    pub open: bool,
    /// Its topic filter, when open with one.
    pub filter: Option<String>,
    /// Every record below this offset was acked.
    pub ack_floor: u64,
    /// The next offset it reads (when open).
    pub cursor: Option<u64>,
    /// Records handed out and not acked yet (when open).
    pub pending_acks: u64,
    /// Records of the stream at or past its floor: what it has not acked yet (an upper
    /// bound for a consumer with a filter, which skips what does not match).
    pub lag: u64,
    /// Records handed out for the first time since it was opened (when open).
    pub delivered: u64,
    /// Records handed out again, since the node started.
    pub redelivered: u64,
    /// When it was opened (microseconds since the UNIX epoch), when open.
    pub opened_at_us: Option<u64>,
    /// The user it belongs to, if it is bound to one.
    pub owner: Option<String>,
}

impl Stream {
    /// Marks durable consumer `name` open for `opener`; returns its stored floor, and
    /// whether it was bound to the opener's user now (to be saved at once).
    ///
    /// # Errors
    /// `NotAuthorized` when it belongs to another user, or is a rule's and a client opens
    /// it; `ConsumerInUse` while it is open.
    pub(crate) fn claim_durable(
        &self,
        name: &str,
        opener: Opener<'_>,
    ) -> Result<(Option<u64>, bool), BrokerError> {
        let mut d = self.durables.lock();
        let user = match opener {
            Opener::Node => None,
            Opener::Client(user) => {
                if name.starts_with(RULE_CONSUMER_PREFIX) {
                    return Err(BrokerError::NotAuthorized(format!(
                        "durable consumer {name}: names starting with {RULE_CONSUMER_PREFIX} \
                         are the node's rules'"
                    )));
                }
                // A blank name is no login (and could not be read back).
                let user = user.filter(|u| !u.trim().is_empty());
                if let Some(owner) = d.owners.get(name) {
                    if user != Some(&**owner) {
                        return Err(BrokerError::NotAuthorized(format!(
                            "durable consumer {name} of stream {} belongs to another user",
                            self.name
                        )));
                    }
                }
                user
            }
        };
        if !d.open.insert(name.to_string()) {
            return Err(BrokerError::ConsumerInUse(name.to_string()));
        }
        let bound = match user {
            Some(user) if !d.owners.contains_key(name) => {
                d.owners.insert(name.to_string(), Arc::from(user));
                true
            }
            _ => false,
        };
        Ok((d.floors.get(name).copied(), bound))
    }

    /// Marks durable consumer `name` closed.
    pub(crate) fn release_durable(&self, name: &str) {
        self.durables.lock().open.remove(name);
    }

    /// Enters a newly opened consumer in the table of open ones.
    pub(crate) fn register_consumer(
        &self,
        name: Option<String>,
        filter: Option<String>,
        cursor: u64,
    ) -> Arc<ConsumerState> {
        let mut d = self.durables.lock();
        let id = d.next_id;
        d.next_id += 1;
        let state = Arc::new(ConsumerState {
            id,
            name,
            filter,
            opened_at_us: crate::batch::now_micros(),
            cursor: AtomicU64::new(cursor),
            floor: AtomicU64::new(cursor),
            pending: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            redelivered: AtomicU64::new(0),
        });
        d.live.insert(id, state.clone());
        state
    }

    /// Takes a closed consumer out of the table; a durable one's redeliveries are kept.
    pub(crate) fn unregister_consumer(&self, state: &ConsumerState) {
        let mut d = self.durables.lock();
        d.live.remove(&state.id);
        if let Some(name) = &state.name {
            *d.redelivered.entry(name.clone()).or_default() += state.redelivered.load(Relaxed);
        }
    }

    /// Consumers open on the stream now, durable or not.
    pub fn open_consumers(&self) -> usize {
        self.durables.lock().live.len()
    }

    /// Every durable consumer (open or not) and every open ephemeral one, durable ones
    /// first by name.
    pub fn consumers(&self) -> Vec<ConsumerInfo> {
        let (first, next) = self.bounds();
        let d = self.durables.lock();
        let mut names: Vec<&String> = d.floors.keys().chain(d.open.iter()).collect();
        names.sort();
        names.dedup();
        let mut out: Vec<ConsumerInfo> = names
            .into_iter()
            .map(|n| self.info(&d, Some(n), first, next))
            .collect();
        let mut ephemeral: Vec<&Arc<ConsumerState>> =
            d.live.values().filter(|s| s.name.is_none()).collect();
        ephemeral.sort_by_key(|s| s.id);
        out.extend(
            ephemeral
                .into_iter()
                .map(|s| live_info(&self.name, s, None, first, next)),
        );
        out
    }

    /// The durable consumer `name`, if the stream has one of that name.
    pub fn consumer(&self, name: &str) -> Option<ConsumerInfo> {
        let (first, next) = self.bounds();
        let d = self.durables.lock();
        (d.floors.contains_key(name) || d.open.contains(name))
            .then(|| self.info(&d, Some(name), first, next))
    }

    fn info(&self, d: &Durables, name: Option<&str>, first: u64, next: u64) -> ConsumerInfo {
        let name = name.unwrap_or_default();
        let kept = d.redelivered.get(name).copied().unwrap_or(0);
        let owner = d.owners.get(name).map(|o| o.to_string());
        match d.live.values().find(|s| s.name.as_deref() == Some(name)) {
            Some(s) => ConsumerInfo {
                owner,
                ..live_info(&self.name, s, Some(kept), first, next)
            },
            None => {
                let floor = d.floors.get(name).copied().unwrap_or(first);
                ConsumerInfo {
                    stream: self.name.clone(),
                    name: Some(name.to_string()),
                    open: false,
                    filter: None,
                    ack_floor: floor,
                    cursor: None,
                    pending_acks: 0,
                    lag: next.saturating_sub(floor.max(first)),
                    delivered: 0,
                    redelivered: kept,
                    opened_at_us: None,
                    owner,
                }
            }
        }
    }

    /// Deletes durable consumer `name`: its position in memory and on disk. Blocks.
    ///
    /// # Errors
    /// `UnknownConsumer` when the stream has none of that name, `ConsumerInUse` while a
    /// client has it open, `Io` when its position file could not be removed.
    pub(crate) fn delete_consumer(&self, name: &str) -> Result<(), BrokerError> {
        // Held until the file is gone: an open in between would queue a position (and an
        // owner) that the removal then dropped.
        let mut d = self.durables.lock();
        if d.open.contains(name) {
            return Err(BrokerError::ConsumerInUse(name.to_string()));
        }
        if d.floors.remove(name).is_none() {
            return Err(BrokerError::UnknownConsumer(name.to_string()));
        }
        d.owners.remove(name);
        d.redelivered.remove(name);
        if let Some(p) = self.positions() {
            p.remove(name).map_err(|why| {
                let context = format!("stream {}: deleting consumer {name}", self.name);
                BrokerError::io(context, std::io::Error::other(why))
            })?;
        }
        Ok(())
    }

    /// Remembers a durable floor (a reopen resumes from it) and, for file-backed streams,
    /// queues it for the position writer (see [`crate::positions`]).
    ///
    /// # Errors
    /// The last write of this consumer's position failed (told once).
    pub(crate) fn store_floor(&self, name: &str, floor: u64) -> Result<(), BrokerError> {
        let owner = {
            let mut d = self.durables.lock();
            d.floors.insert(name.to_string(), floor);
            d.owners.get(name).cloned()
        };
        let Some(positions) = self.positions() else {
            return Ok(());
        };
        positions
            .store(name, Saved { floor, owner })
            .map_err(|why| {
                let context = format!("stream {}: consumer position {name}", self.name);
                BrokerError::io(context, std::io::Error::other(why))
            })
    }

    /// Waits until every consumer position stored so far is written to disk. Blocks.
    pub fn sync_positions(&self) {
        if let Some(p) = self.positions.get() {
            p.sync();
        }
    }

    /// The position writer, started on first use; None for a memory stream.
    pub(super) fn positions(&self) -> Option<&Positions> {
        let dir = self.dir.as_ref()?;
        let fsync = self.storage == StorageMode::Fsync;
        Some(
            self.positions
                .get_or_init(|| Positions::start(dir.join("consumers"), fsync)),
        )
    }

    /// Test hook: while `hold` is set no consumer position is written (they stay queued).
    #[doc(hidden)]
    pub fn hold_positions(&self, hold: bool) {
        if let Some(p) = self.positions() {
            p.hold(hold);
        }
    }
}

fn live_info(
    stream: &str,
    s: &ConsumerState,
    kept_redeliveries: Option<u64>,
    first: u64,
    next: u64,
) -> ConsumerInfo {
    let floor = s.floor.load(Relaxed);
    ConsumerInfo {
        stream: stream.to_string(),
        name: s.name.clone(),
        open: true,
        filter: s.filter.clone(),
        ack_floor: floor,
        cursor: Some(s.cursor.load(Relaxed)),
        pending_acks: s.pending.load(Relaxed),
        lag: next.saturating_sub(floor.max(first)),
        delivered: s.delivered.load(Relaxed),
        redelivered: s.redelivered.load(Relaxed) + kept_redeliveries.unwrap_or(0),
        opened_at_us: Some(s.opened_at_us),
        owner: None,
    }
}

/// The saved positions (and owners) of a stream's durable consumers.
pub(super) fn load_floors(dir: &Path) -> Result<HashMap<String, Saved>, BrokerError> {
    let mut floors = HashMap::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(floors),
        Err(e) => return Err(BrokerError::io(format!("reading {}", dir.display()), e)),
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        match std::fs::read_to_string(entry.path()).map(|s| Saved::parse(&s)) {
            Ok(Some(saved)) => {
                floors.insert(name, saved);
            }
            _ => {
                tracing::warn!(path = %entry.path().display(), "ignoring unreadable consumer position")
            }
        }
    }
    Ok(floors)
}
