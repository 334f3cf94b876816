//! Mosquitto's `acl_file`: who may publish to, subscribe to and receive which topics.
//!
//! The file is read as mosquitto.conf(5) describes it (section `acl_file`) and as
//! Mosquitto 2.0 reads it where the page is silent (`parse`). [`Acl::parse`] is a pure
//! function of the text, so reloading on SIGHUP is [`Acl::load`] and swapping the
//! `Arc<Acl>` the connections read; a bad file is refused whole, and the old one stays.
//!
//! ```text
//! # anonymous clients (lines before any `user`)
//! topic read public/#
//!
//! user alice
//! topic readwrite alice/#
//! topic deny alice/secret
//! topic read with space/x        <- the access word is needed when the topic has a space
//!
//! pattern readwrite users/%u/#   <- every client, wherever the line is
//! pattern read devices/%c/#
//! ```
//!
//! ```
//! use fogline_auth::acl::{Access, Acl};
//! use std::sync::Arc;
//!
//! let acl = Arc::new(Acl::parse("user alice\ntopic readwrite alice/#\ntopic deny alice/secret\n")?);
//! assert!(acl.check(Some("alice"), "c1", "alice/x", Access::Write));
//! // Per connection: the user is looked up once.
//! let alice = acl.client(Some("alice"), "c1");
//! assert!(alice.check("alice/#", Access::Subscribe));
//! assert!(!alice.check("alice/secret", Access::Read));
//! assert!(!alice.check("bob/x", Access::Write));
//! # Ok::<(), fogline_auth::acl::ParseError>(())
//! ```
//!
//! # Semantics, each following mosquitto.conf(5) `acl_file` or Mosquitto 2.0's behaviour
//!
//! - **Who gets which rules.** `topic` lines before any `user` line are the anonymous
//!   clients' (a client without a username); those after `user NAME` are NAME's (the
//!   username, not the client id), and a name given twice collects both sections. A client
//!   with a username that has no section has only the patterns. `pattern` lines apply to
//!   every client wherever they are in the file. An empty file allows nothing.
//! - **Deny wins, within a list.** "Any `deny` topics are handled before topics that grant
//!   read/write access": in a list a matching `deny` refuses whatever else matches. The
//!   client's own list is asked first and the patterns only if it does not decide, as in
//!   Mosquitto: a user's `topic readwrite a/#` is not undone by a `pattern deny a/%u`.
//! - **Access.** `read`, `write`, `readwrite` (the default) or `deny`. Publishing needs
//!   write ([`Access::Write`]); receiving a message needs read on its topic
//!   ([`Access::Read`], checked for every message delivered, retained ones included).
//! - **Subscribing** ([`Access::Subscribe`]) needs a read rule whose filter takes in every
//!   topic the subscription filter can match (`a/#` takes in `a/+/b`; `a/+` does not take
//!   in `a/#`, nor `+/#` take in `#`), and no deny rule that takes it in. Mosquitto 2.0's
//!   `acl_file` grants every subscription and relies on the per-message read check alone;
//!   fogline refuses, in SUBACK, a subscription that could never receive anything, with the
//!   matching of one filter against another of Mosquitto 2.1 (`mosquitto_sub_matches_acl`).
//!   Each message is still checked with [`Access::Read`]: `topic read a/#` with `topic deny
//!   a/secret` grants `a/#` and withholds `a/secret`'s messages.
//! - **`$` topics.** A topic starting with `$` (`$SYS/...`) is not matched by `+` or `#`
//!   in its first level (MQTT 3.1.1 section 4.7.2, and Mosquitto's ACL check): `topic read
//!   #` does not grant `$SYS/broker/uptime`; `topic read $SYS/#` does.
//! - **`%u` and `%c`** in `pattern` lines stand for the client's username and client id
//!   (in `topic` lines they are plain text). A pattern with `%u` matches nothing for an
//!   anonymous client. mosquitto.conf(5) says the substitution "must be the only text for
//!   that level"; Mosquitto 2.0 substitutes it anywhere in a level, and so do we (files
//!   that rely on it keep working; [`Acl::warnings`] names such lines).
//! - **Refused substitutions.** When the patterns are asked, a client whose username or
//!   client id holds `+` or `#` is refused everything (Mosquitto does so, or `%u` could be
//!   made a wildcard); fogline refuses `/` too, so that user `a/b` cannot reach into user
//!   `a`'s `users/a/...` through `users/%u/#` (Mosquitto 2.0 lets it).
//! - Topics are compared byte for byte, case-sensitively.
//!
//! Not here (the broker's): Mosquitto refuses client publishes to `$SYS` whatever the ACL
//! says, and bridges bypass the ACL.

mod error;
mod parse;
mod tree;

use foldhash::fast::RandomState;
use std::collections::HashMap;
use std::fmt;
use std::io::Read as _;
use std::path::Path;
use std::sync::Arc;

pub use error::{LoadError, ParseError, ParseErrorKind};
use tree::{Bits, Subst, Tree, Verdict};

/// Largest ACL file [`Acl::load`] reads (and [`Acl::parse_bytes`] accepts): 16 MiB, tens
/// of thousands of rules, so memory stays bounded whatever the file holds.
pub const MAX_FILE_BYTES: usize = 16 << 20;

/// What a client asks to do with a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Receive a message published to this topic (Mosquitto's `MOSQ_ACL_READ`).
    Read,
    /// Publish to this topic (`MOSQ_ACL_WRITE`).
    Write,
    /// Subscribe to this topic filter (wildcards allowed).
    Subscribe,
}

/// What a rule grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grant {
    /// `read`
    Read,
    /// `write`
    Write,
    /// `readwrite`, also what a rule without an access word grants.
    ReadWrite,
    /// `deny`
    Deny,
}

/// Whose a rule is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    /// A `topic` line before any `user` line.
    Anonymous,
    /// A `topic` line after `user NAME`.
    User(String),
    /// A `pattern` line: every client, `%u` and `%c` substituted.
    Pattern,
}

/// One rule as the file states it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// The line (1-based).
    pub line: usize,
    /// Whose it is.
    pub scope: Scope,
    /// What it grants.
    pub grant: Grant,
    /// Its topic filter.
    pub topic: String,
}

/// A line Mosquitto accepts but that likely does not do what was meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The line (1-based).
    pub line: usize,
    /// Why.
    pub message: &'static str,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// A parsed ACL file, compiled for checking. Immutable; share it in an `Arc`.
#[derive(Debug)]
pub struct Acl {
    /// Index 0: the anonymous clients' list; then one per username.
    lists: Vec<Tree>,
    users: HashMap<Box<str>, usize, RandomState>,
    patterns: Tree,
    rules: Vec<Rule>,
    warnings: Vec<Warning>,
}

impl Acl {
    /// Parses an ACL file's text.
    ///
    /// # Errors
    /// The first line Mosquitto would refuse. The text's size is not limited here; input
    /// from outside goes through [`Acl::parse_bytes`] or [`Acl::load`], which limit it.
    pub fn parse(text: &str) -> Result<Acl, ParseError> {
        let mut acl = Acl {
            lists: vec![Tree::default()],
            users: HashMap::default(),
            patterns: Tree::default(),
            rules: Vec::new(),
            warnings: Vec::new(),
        };
        let mut list = 0;
        let mut scope = Scope::Anonymous;
        for (i, line) in text.split('\n').enumerate() {
            let n = i + 1;
            match parse::parse_line(line).map_err(|kind| ParseError::new(n, kind))? {
                parse::Line::Nothing => {}
                parse::Line::User(name) => {
                    let next = acl.lists.len();
                    list = *acl.users.entry(name.into()).or_insert(next);
                    if list == next {
                        acl.lists.push(Tree::default());
                    }
                    scope = Scope::User(name.to_owned());
                }
                parse::Line::Topic(grant, topic) => {
                    acl.lists[list].insert(topic, grant, false);
                    acl.rules.push(rule(n, scope.clone(), grant, topic));
                }
                parse::Line::Pattern(grant, topic) => {
                    acl.patterns.insert(topic, grant, true);
                    acl.warn_pattern(n, topic);
                    acl.rules.push(rule(n, Scope::Pattern, grant, topic));
                }
            }
        }
        Ok(acl)
    }

    /// Parses an ACL file's bytes: as [`Acl::parse`], refusing more than
    /// [`MAX_FILE_BYTES`] and naming the first line that is not UTF-8.
    ///
    /// # Errors
    /// As [`Acl::parse`], and [`ParseErrorKind::NotUtf8`] or [`ParseErrorKind::TooLarge`].
    pub fn parse_bytes(bytes: &[u8]) -> Result<Acl, ParseError> {
        if bytes.len() > MAX_FILE_BYTES {
            let lines = bytes[..MAX_FILE_BYTES].split(|b| *b == b'\n').count();
            return Err(ParseError::new(lines, ParseErrorKind::TooLarge));
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => Acl::parse(text),
            Err(e) => {
                let line = 1 + bytes[..e.valid_up_to()]
                    .iter()
                    .filter(|b| **b == b'\n')
                    .count();
                Err(ParseError::new(line, ParseErrorKind::NotUtf8))
            }
        }
    }

    /// Reads and parses an ACL file: what a start and each reload (SIGHUP) do.
    ///
    /// # Errors
    /// The file cannot be read, is larger than [`MAX_FILE_BYTES`], or has a line Mosquitto
    /// would refuse.
    pub fn load(path: impl AsRef<Path>) -> Result<Acl, LoadError> {
        let path = path.as_ref();
        let io = |source| LoadError::Io {
            path: path.to_owned(),
            source,
        };
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .map_err(io)?
            // One byte more than the limit tells a file at the limit from a larger one.
            .take(MAX_FILE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        if bytes.len() > MAX_FILE_BYTES {
            return Err(LoadError::TooLarge {
                path: path.to_owned(),
                limit: MAX_FILE_BYTES,
            });
        }
        Acl::parse_bytes(&bytes).map_err(|source| LoadError::Parse {
            path: path.to_owned(),
            source,
        })
    }

    /// Whether a client may do `access` on `topic` (a topic name for [`Access::Read`] and
    /// [`Access::Write`], a filter for [`Access::Subscribe`]). `username` is `None` for an
    /// anonymous client. A malformed topic or filter is refused.
    ///
    /// For a connection's many checks, [`Acl::client`] does the per-client work once.
    pub fn check(
        &self,
        username: Option<&str>,
        client_id: &str,
        topic: &str,
        access: Access,
    ) -> bool {
        let list = self.list_of(username);
        let subst = Subst {
            user: username,
            client: client_id,
        };
        self.decide(list, refused(username, client_id), subst, topic, access)
    }

    /// The view of the rules for one connection (its username and client id are fixed),
    /// which checks without looking the user up or allocating.
    pub fn client(self: &Arc<Self>, username: Option<&str>, client_id: &str) -> ClientAcl {
        ClientAcl {
            list: self.list_of(username),
            refused: refused(username, client_id),
            acl: Arc::clone(self),
            username: username.map(Into::into),
            client_id: client_id.into(),
        }
    }

    /// The rules, in file order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Lines accepted but likely wrong (Mosquitto logs the first kind at start).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    fn list_of(&self, username: Option<&str>) -> Option<usize> {
        match username {
            None => Some(0),
            Some(name) => self.users.get(name).copied(),
        }
    }

    fn decide(
        &self,
        list: Option<usize>,
        refused: bool,
        subst: Subst<'_>,
        topic: &str,
        access: Access,
    ) -> bool {
        let (want, valid) = match access {
            Access::Read => (Bits::READ, valid_topic(topic)),
            Access::Write => (Bits::WRITE, valid_topic(topic)),
            Access::Subscribe => (Bits::READ, parse::check_filter(topic).is_ok()),
        };
        if !valid {
            return false;
        }
        let ask = |tree: &Tree, subst| match access {
            Access::Subscribe => tree.filter(topic, want, subst),
            _ => tree.topic(topic, want, subst),
        };
        if let Some(list) = list {
            match ask(&self.lists[list], subst) {
                Verdict::Deny => return false,
                Verdict::Allow => return true,
                Verdict::NoMatch => {}
            }
        }
        if self.patterns.is_empty() || refused {
            return false;
        }
        ask(&self.patterns, subst) == Verdict::Allow
    }

    fn warn_pattern(&mut self, line: usize, topic: &str) {
        let message = if !topic.contains("%u") && !topic.contains("%c") {
            "pattern without %u or %c: it applies to every client alike"
        } else if topic
            .split('/')
            .any(|l| (l.contains("%u") || l.contains("%c")) && l != "%u" && l != "%c")
        {
            "%u or %c inside a level: Mosquitto 2.0 substitutes it, its documentation and 2.1 do not"
        } else {
            return;
        };
        self.warnings.push(Warning { line, message });
    }
}

/// Mosquitto refuses a username or client id with `+` or `#` once the patterns are asked;
/// fogline also `/` (see the module's documentation).
fn refused(username: Option<&str>, client_id: &str) -> bool {
    let bad = |s: &str| s.contains(['+', '#', '/']);
    username.is_some_and(bad) || bad(client_id)
}

fn valid_topic(topic: &str) -> bool {
    !topic.is_empty() && topic.len() <= parse::MAX_TOPIC_BYTES && !topic.contains(['+', '#'])
}

fn rule(line: usize, scope: Scope, grant: Grant, topic: &str) -> Rule {
    Rule {
        line,
        scope,
        grant,
        topic: topic.to_owned(),
    }
}

/// One connection's view of an [`Acl`]: its list found and its substitutions checked once.
/// It holds the `Acl` it was made from; after a reload, make a new one from the new `Acl`.
#[derive(Debug, Clone)]
pub struct ClientAcl {
    acl: Arc<Acl>,
    list: Option<usize>,
    refused: bool,
    username: Option<Box<str>>,
    client_id: Box<str>,
}

impl ClientAcl {
    /// As [`Acl::check`] for this client.
    pub fn check(&self, topic: &str, access: Access) -> bool {
        let subst = Subst {
            user: self.username.as_deref(),
            client: &self.client_id,
        };
        self.acl
            .decide(self.list, self.refused, subst, topic, access)
    }

    /// The rules this view checks against.
    pub fn acl(&self) -> &Arc<Acl> {
        &self.acl
    }
}
