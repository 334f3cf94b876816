//! Who may connect and what each connection may do: the node's users (`password_file`,
//! `allow_anonymous`) and its access control list (`acl_file`), in Mosquitto's formats
//! (`fogline_auth`), held once by the broker and applied to every protocol.
//!
//! - Authentication: MQTT's CONNECT and the native Hello hand their credentials to
//!   [`Guard::authenticate`] (off the async threads: a password hash takes milliseconds).
//! - Access control: each connection gets a [`ClientGuard`] for its user and client id.
//!   Publishing asks [`Access::Write`] on the topic, subscribing [`Access::Subscribe`] on the
//!   filter (checked by [`Broker::subscribe`](crate::Broker::subscribe) itself), reading a
//!   stream (a durable consumer, a replay, a store query) [`Access::Subscribe`] on the
//!   consumer's filter or else on every subject of the stream, and every delivered message
//!   [`Access::Read`] on its topic. That last check is made when a topic's route is computed
//!   (a subscription its reader may not read is left out of the route), not per message, so
//!   it costs nothing on the publish path; a reload of the ACL recomputes every route.
//! - Administration (managing streams, consumers, rules) asks `$fogline/admin/<what>`:
//!   [`Access::Read`] to look, [`Access::Write`] to change (`topic readwrite
//!   $fogline/admin/#` makes a user an administrator).
//! - Without an `acl_file` every connection may do everything, as in Mosquitto; connections
//!   of the in-process link (rules, bridges) are not checked, as Mosquitto's bridges are not.
//!
//! Denials and failed logins are counted ([`GuardStats`], in `/metrics`) and logged, at most
//! one line a second for each kind with the number left out.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fogline_auth::acl::{Access, Acl};
use fogline_auth::{AllowAll, Authenticator, Login, Refused, Users};
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use crate::error::BrokerError;
use crate::stream::Stream;

/// The documented default of the `[auth]` section.
pub const DEFAULT_SECTION: &str = include_str!("auth.toml");

/// The `[auth]` section: users and access control for every listener.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AuthConfig {
    /// Users and their password hashes, in Mosquitto's format (`mosquitto_passwd` or
    /// `fogline passwd`).
    pub password_file: Option<PathBuf>,
    /// Who may do what, in Mosquitto's `acl_file` syntax.
    pub acl_file: Option<PathBuf>,
    /// Whether clients without a user name may connect; unset: only when there is no
    /// `password_file`, as in Mosquitto.
    pub allow_anonymous: Option<bool>,
}

impl AuthConfig {
    /// Whether clients that send no user name are admitted.
    pub fn anonymous_allowed(&self) -> bool {
        self.allow_anonymous.unwrap_or(self.password_file.is_none())
    }

    /// Whether clients must prove who they are (a password file, or no anonymous clients).
    pub fn authenticates(&self) -> bool {
        self.password_file.is_some() || !self.anonymous_allowed()
    }
}

/// A file of `[auth]` that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// The password file cannot be read or has a malformed line.
    #[error("password_file: {0}")]
    Users(#[from] fogline_auth::passwd::Error),
    /// The ACL file cannot be read or has a malformed line.
    #[error("acl_file: {0}")]
    Acl(#[from] fogline_auth::acl::LoadError),
}

/// What was refused, for the counters and the logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Denied {
    /// A publish (write to a topic).
    Publish,
    /// A subscription.
    Subscribe,
    /// A message left out of a subscription's delivery (read of a topic).
    Read,
    /// A durable consumer, replay or query of a stream.
    Consume,
    /// An administrative operation.
    Admin,
}

impl Denied {
    /// The label of the metric.
    pub fn as_str(self) -> &'static str {
        match self {
            Denied::Publish => "publish",
            Denied::Subscribe => "subscribe",
            Denied::Read => "read",
            Denied::Consume => "consume",
            Denied::Admin => "admin",
        }
    }

    /// Every kind, in the counters' order.
    pub const ALL: [Denied; 5] = [
        Denied::Publish,
        Denied::Subscribe,
        Denied::Read,
        Denied::Consume,
        Denied::Admin,
    ];
}

/// Counters of the guard.
#[derive(Debug, Default)]
pub struct GuardStats {
    /// Logins refused: bad password, unknown user, anonymous where not allowed.
    pub auth_failures: AtomicU64,
    denied: [AtomicU64; 5],
}

impl GuardStats {
    /// Denials of `kind` so far.
    pub fn denied(&self, kind: Denied) -> u64 {
        self.denied[kind as usize].load(Ordering::Relaxed)
    }
}

/// The node's users and access control (see the module's documentation).
pub struct Guard {
    auth: RwLock<AuthConfig>,
    /// `None`: every client is admitted as whom it says it is.
    users: RwLock<Option<Arc<Users>>>,
    acl: RwLock<Option<Arc<Acl>>>,
    /// Whether `acl` is set: the checks of a node without an ACL take no lock.
    acl_on: AtomicBool,
    /// Bumped after every change of `acl`: what a connection remembers of an older ACL
    /// ([`ClientGuard::may_publish`]) no longer counts.
    acl_generation: AtomicU64,
    /// Called after the ACL changed (the broker recomputes its routes).
    on_change: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    stats: GuardStats,
    log: Mutex<LogLimit>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("auth", &*self.auth.read())
            .field("acl_on", &self.acl_on.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Default for Guard {
    fn default() -> Self {
        Guard {
            auth: RwLock::new(AuthConfig::default()),
            users: RwLock::new(None),
            acl: RwLock::new(None),
            acl_on: AtomicBool::new(false),
            acl_generation: AtomicU64::new(0),
            on_change: Mutex::new(None),
            stats: GuardStats::default(),
            log: Mutex::new(LogLimit::default()),
        }
    }
}

impl Guard {
    /// Reads the files of `config` and puts them in force.
    ///
    /// # Errors
    /// A file cannot be read or is malformed; nothing changes then.
    pub fn configure(&self, config: &AuthConfig) -> Result<(), GuardError> {
        let users = if config.authenticates() {
            let path = config.password_file.as_deref();
            Some(Arc::new(Users::load(path, config.anonymous_allowed())?))
        } else {
            None
        };
        let acl = load_acl(config.acl_file.as_deref())?;
        *self.auth.write() = config.clone();
        *self.users.write() = users;
        self.set_acl(acl);
        Ok(())
    }

    /// Reads the password and ACL files again (SIGHUP). Connections stay; their next
    /// checks use the new rules. A file that cannot be read keeps its old contents in
    /// force, and its error is returned.
    pub fn reload(&self) -> Vec<GuardError> {
        let mut errors = Vec::new();
        let users = self.users.read().clone();
        if let Some(users) = users {
            if let Err(e) = users.reload() {
                errors.push(e.into());
            }
        }
        let path = self.auth.read().acl_file.clone();
        if path.is_some() {
            match load_acl(path.as_deref()) {
                Ok(acl) => self.set_acl(acl),
                Err(e) => errors.push(e),
            }
        }
        errors
    }

    /// The configuration in force.
    pub fn config(&self) -> AuthConfig {
        self.auth.read().clone()
    }

    /// Whether clients must prove who they are.
    pub fn authenticates(&self) -> bool {
        self.users.read().is_some()
    }

    /// Whether an ACL is in force.
    pub fn has_acl(&self) -> bool {
        self.acl_on.load(Ordering::Acquire)
    }

    /// Counters.
    pub fn stats(&self) -> &GuardStats {
        &self.stats
    }

    /// The view of one connection: `user` as authenticated (`None`: anonymous).
    pub fn client(self: &Arc<Self>, user: Option<&str>, client_id: &str) -> ClientGuard {
        ClientGuard {
            guard: Arc::clone(self),
            user: user.map(Into::into),
            client_id: client_id.into(),
            last_publish: Mutex::new(None),
        }
    }

    /// Counts and logs (rate-limited) a refused login.
    pub fn count_auth_failure(&self, protocol: &str, peer: &str, login: &Login, why: &Refused) {
        self.stats.auth_failures.fetch_add(1, Ordering::Relaxed);
        if let Some(skipped) = self.log.lock().allow(0) {
            tracing::warn!(
                protocol,
                peer,
                client = login.client_id,
                user = login.username.as_deref().unwrap_or(""),
                error = %why,
                skipped,
                "login refused"
            );
        }
    }

    pub(crate) fn set_on_change(&self, f: Box<dyn Fn() + Send + Sync>) {
        *self.on_change.lock() = Some(f);
    }

    fn set_acl(&self, acl: Option<Arc<Acl>>) {
        self.acl_on.store(acl.is_some(), Ordering::Release);
        *self.acl.write() = acl;
        // After the write: a check that saw the new generation decided under the new rules.
        self.acl_generation.fetch_add(1, Ordering::AcqRel);
        if let Some(f) = &*self.on_change.lock() {
            f();
        }
    }

    fn deny(&self, kind: Denied, client: &ClientGuard, what: &str) {
        self.stats.denied[kind as usize].fetch_add(1, Ordering::Relaxed);
        if let Some(skipped) = self.log.lock().allow(1 + kind as usize) {
            tracing::info!(
                user = client.user.as_deref().unwrap_or(""),
                client = &*client.client_id,
                what,
                operation = kind.as_str(),
                skipped,
                "denied by the ACL"
            );
        }
    }
}

impl Authenticator for Guard {
    fn authenticate(&self, login: &Login) -> Result<Option<String>, Refused> {
        let users = self.users.read().clone();
        match users {
            Some(u) => u.authenticate(login),
            None => AllowAll.authenticate(login),
        }
    }

    fn admits_anonymous(&self) -> bool {
        self.users
            .read()
            .as_ref()
            .is_none_or(|u| u.admits_anonymous())
    }
}

fn load_acl(path: Option<&Path>) -> Result<Option<Arc<Acl>>, GuardError> {
    let Some(path) = path else {
        return Ok(None);
    };
    let acl = Acl::load(path)?;
    for w in acl.warnings() {
        tracing::warn!(file = %path.display(), line = w.line, "{}", w.message);
    }
    Ok(Some(Arc::new(acl)))
}

/// One connection's view of the guard: its user and client id fixed at login.
#[derive(Debug)]
pub struct ClientGuard {
    guard: Arc<Guard>,
    user: Option<Box<str>>,
    client_id: Box<str>,
    /// The last publish decision: a device publishes to one topic, or a few, over and over,
    /// and the ACL's answer stays the same until it is reloaded.
    last_publish: Mutex<Option<LastCheck>>,
}

/// A decision and the ACL generation it was made under.
#[derive(Debug)]
struct LastCheck {
    generation: u64,
    topic: Box<str>,
    allowed: bool,
}

impl Clone for ClientGuard {
    fn clone(&self) -> Self {
        ClientGuard {
            guard: Arc::clone(&self.guard),
            user: self.user.clone(),
            client_id: self.client_id.clone(),
            last_publish: Mutex::new(None),
        }
    }
}

impl ClientGuard {
    /// The authenticated user (`None`: anonymous).
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// Whether the ACL lets this client do `access` on `topic`; uncounted.
    pub fn allows(&self, topic: &str, access: Access) -> bool {
        if !self.guard.acl_on.load(Ordering::Acquire) {
            return true;
        }
        // Checked under the read lock: no reference count bumped per check.
        let acl = self.guard.acl.read();
        acl.as_ref()
            .is_none_or(|acl| acl.check(self.user.as_deref(), &self.client_id, topic, access))
    }

    /// Whether this client may publish to `topic`; a refusal is counted and logged. The
    /// answer for the last topic is kept while the ACL stays the same (with 100 rules the
    /// check was a few percent of a publish's cost).
    pub fn may_publish(&self, topic: &str) -> bool {
        if !self.guard.acl_on.load(Ordering::Acquire) {
            return true;
        }
        let generation = self.guard.acl_generation.load(Ordering::Acquire);
        let mut last = self.last_publish.lock();
        let allowed = match &*last {
            Some(c) if c.generation == generation && *c.topic == *topic => c.allowed,
            _ => {
                let allowed = self.allows(topic, Access::Write);
                *last = Some(LastCheck {
                    generation,
                    topic: topic.into(),
                    allowed,
                });
                allowed
            }
        };
        drop(last);
        self.counted(Denied::Publish, topic, allowed)
    }

    /// Whether this client may subscribe to `filter`; a refusal is counted and logged.
    pub fn may_subscribe(&self, filter: &str) -> bool {
        self.checked(Denied::Subscribe, filter, Access::Subscribe)
    }

    /// Whether messages of `topic` may be delivered to this client; a refusal is counted
    /// and logged.
    pub fn may_read(&self, topic: &str) -> bool {
        self.checked(Denied::Read, topic, Access::Read)
    }

    /// Publishing to `topic`, as a broker error.
    ///
    /// # Errors
    /// [`BrokerError::NotAuthorized`] naming the topic.
    pub fn check_publish(&self, topic: &str) -> Result<(), BrokerError> {
        if self.may_publish(topic) {
            Ok(())
        } else {
            Err(BrokerError::NotAuthorized(format!(
                "may not publish to {topic:?}"
            )))
        }
    }

    /// Reading `stream` through a consumer, replay or query with `filter` (empty or `#`:
    /// every record): the filter must be one the client may subscribe to, or without one,
    /// every subject of the stream.
    ///
    /// # Errors
    /// [`BrokerError::NotAuthorized`] naming the stream and what may not be read.
    pub fn check_stream(&self, stream: &Stream, filter: &str) -> Result<(), BrokerError> {
        if !self.guard.has_acl() {
            return Ok(());
        }
        let refused = if filter.is_empty() || filter == "#" {
            stream
                .subjects()
                .iter()
                .find(|s| !self.allows(s, Access::Subscribe))
                .cloned()
        } else {
            (!self.allows(filter, Access::Subscribe)).then(|| filter.to_owned())
        };
        match refused {
            None => Ok(()),
            Some(what) => {
                self.guard
                    .deny(Denied::Consume, self, &format!("{}: {what}", stream.name()));
                Err(BrokerError::NotAuthorized(format!(
                    "may not read stream {:?}: its subject {what:?} is not readable",
                    stream.name()
                )))
            }
        }
    }

    /// An administrative operation on `what` (`streams/NAME`, `consumers/STREAM/NAME`,
    /// `rules/ID`, ...): `change` asks write, else read, on `$fogline/admin/<what>`.
    ///
    /// # Errors
    /// [`BrokerError::NotAuthorized`] naming the operation.
    pub fn check_admin(&self, what: &str, change: bool) -> Result<(), BrokerError> {
        let topic = format!("$fogline/admin/{what}");
        let access = if change { Access::Write } else { Access::Read };
        if self.allows(&topic, access) {
            return Ok(());
        }
        self.guard.deny(Denied::Admin, self, &topic);
        Err(BrokerError::NotAuthorized(format!(
            "may not {} {topic:?}",
            if change { "change" } else { "read" }
        )))
    }

    fn checked(&self, kind: Denied, topic: &str, access: Access) -> bool {
        self.counted(kind, topic, self.allows(topic, access))
    }

    /// `ok`, a refusal counted and logged.
    fn counted(&self, kind: Denied, topic: &str, ok: bool) -> bool {
        if !ok {
            self.guard.deny(kind, self, topic);
        }
        ok
    }
}

/// At most one log line a second per kind; the lines left out are counted into the next.
#[derive(Default)]
struct LogLimit {
    last: [Option<Instant>; 6],
    skipped: [u64; 6],
}

impl LogLimit {
    /// `Some(left out since the last line)` when a line of `kind` may be logged now.
    fn allow(&mut self, kind: usize) -> Option<u64> {
        let now = Instant::now();
        if self.last[kind].is_some_and(|t| now.duration_since(t) < Duration::from_secs(1)) {
            self.skipped[kind] += 1;
            return None;
        }
        self.last[kind] = Some(now);
        Some(std::mem::take(&mut self.skipped[kind]))
    }
}

#[cfg(test)]
mod tests;
