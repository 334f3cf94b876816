//! A list of rules compiled into a tree of topic levels, so a check walks the topic's
//! levels once instead of matching every rule: with hundreds of rules a check visits only
//! the branches the topic can take (its literal level, `+`, and `%u`/`%c` templates), and
//! allocates nothing.
//!
//! A node is the filter prefix that leads to it. `here` holds the grants of rules that end
//! at the node, `rest` those of rules that continue with `#` (which also matches the node
//! itself: `a/#` matches `a`).

use foldhash::fast::RandomState;
use std::collections::HashMap;

use super::Grant;

/// Union of the grants of matching rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Bits(u8);

impl Bits {
    pub(crate) const READ: Bits = Bits(1);
    pub(crate) const WRITE: Bits = Bits(2);
    const DENY: Bits = Bits(4);

    fn of(grant: Grant) -> Bits {
        match grant {
            Grant::Read => Bits::READ,
            Grant::Write => Bits::WRITE,
            Grant::ReadWrite => Bits(3),
            Grant::Deny => Bits::DENY,
        }
    }

    fn add(&mut self, other: Bits) {
        self.0 |= other.0;
    }

    fn has(self, other: Bits) -> bool {
        self.0 & other.0 != 0
    }
}

/// What a list of rules says about one check, as Mosquitto walks a list: a matching `deny`
/// ends the check; otherwise a matching rule with the access asked for ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Deny,
    Allow,
    /// No rule of the list decides; the next list is asked.
    NoMatch,
}

/// The values `%u` and `%c` stand for; `user` is `None` for an anonymous client, whose
/// rules with `%u` match nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subst<'a> {
    pub(crate) user: Option<&'a str>,
    pub(crate) client: &'a str,
}

/// A pattern level holding `%u` or `%c`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Piece {
    Text(Box<str>),
    User,
    Client,
}

#[derive(Debug, Default)]
struct Node {
    literal: HashMap<Box<str>, Node, RandomState>,
    plus: Option<Box<Node>>,
    templates: Vec<(Vec<Piece>, Node)>,
    here: Bits,
    rest: Bits,
}

/// One list of rules: a user's, the anonymous clients', or the patterns.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    root: Node,
    rules: usize,
    has_deny: bool,
}

/// A walk's state: what it looks for and what it found so far.
struct Walk<'a> {
    subst: Subst<'a>,
    want: Bits,
    /// Without `deny` rules the first grant of `want` decides.
    stop_on_allow: bool,
    found: Bits,
}

impl Walk<'_> {
    fn done(&self) -> bool {
        self.found.has(Bits::DENY) || (self.stop_on_allow && self.found.has(self.want))
    }
}

/// The level a text starts with and the text after its `/` (`None`: it was the last).
fn split(text: &str) -> (&str, Option<&str>) {
    match text.split_once('/') {
        Some((level, rest)) => (level, Some(rest)),
        None => (text, None),
    }
}

/// `%u` and `%c` anywhere in a level, as Mosquitto 2.0 substitutes them (`%%u` is `%`
/// then `%u`); `None` when the level has neither.
fn template(level: &str) -> Option<Vec<Piece>> {
    if !level.contains("%u") && !level.contains("%c") {
        return None;
    }
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut chars = level.chars().peekable();
    while let Some(c) = chars.next() {
        let piece = match (c, chars.peek()) {
            ('%', Some('u')) => Piece::User,
            ('%', Some('c')) => Piece::Client,
            _ => {
                text.push(c);
                continue;
            }
        };
        chars.next();
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text).into()));
        }
        pieces.push(piece);
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text.into()));
    }
    Some(pieces)
}

/// Whether a template, substituted, is exactly `level`.
fn fills(pieces: &[Piece], level: &str, s: Subst<'_>) -> bool {
    let mut left = level;
    for piece in pieces {
        let part = match piece {
            Piece::Text(t) => t,
            Piece::Client => s.client,
            Piece::User => match s.user {
                Some(u) => u,
                None => return false,
            },
        };
        match left.strip_prefix(part) {
            Some(l) => left = l,
            None => return false,
        }
    }
    left.is_empty()
}

impl Tree {
    pub(crate) fn is_empty(&self) -> bool {
        self.rules == 0
    }

    /// Adds a rule; `filter` is valid (checked by the parser) and, in a `topic` list,
    /// `%u`/`%c` in it are plain text (`patterns` false).
    pub(crate) fn insert(&mut self, filter: &str, grant: Grant, patterns: bool) {
        self.rules += 1;
        self.has_deny |= grant == Grant::Deny;
        let bits = Bits::of(grant);
        let mut node = &mut self.root;
        let mut rest = Some(filter);
        while let Some(text) = rest {
            let (level, next) = split(text);
            rest = next;
            node = match level {
                "#" => {
                    node.rest.add(bits);
                    return;
                }
                "+" => node.plus.get_or_insert_with(Default::default),
                _ => match template(level).filter(|_| patterns) {
                    Some(t) => match node.templates.iter().position(|(p, _)| *p == t) {
                        Some(i) => &mut node.templates[i].1,
                        None => {
                            node.templates.push((t, Node::default()));
                            &mut node.templates.last_mut().expect("just pushed").1
                        }
                    },
                    None => node.literal.entry(level.into()).or_default(),
                },
            };
        }
        node.here.add(bits);
    }

    /// The verdict on a topic name (publish: `want` write; delivery: read). `topic` is
    /// valid: not empty, no wildcard.
    pub(crate) fn topic(&self, topic: &str, want: Bits, subst: Subst<'_>) -> Verdict {
        let mut walk = self.walk(want, subst);
        // A topic starting with `$` is not matched by a wildcard in its first level.
        topic_walk(&self.root, Some(topic), !topic.starts_with('$'), &mut walk);
        self.verdict(&walk)
    }

    /// The verdict on a subscription filter: does a rule's filter take in every topic the
    /// subscription can match (`a/#` takes in `a/+/b`; `a/+` does not take in `a/#`)?
    pub(crate) fn filter(&self, filter: &str, want: Bits, subst: Subst<'_>) -> Verdict {
        let mut walk = self.walk(want, subst);
        filter_walk(
            &self.root,
            Some(filter),
            !filter.starts_with('$'),
            &mut walk,
        );
        self.verdict(&walk)
    }

    fn walk<'a>(&self, want: Bits, subst: Subst<'a>) -> Walk<'a> {
        Walk {
            subst,
            want,
            stop_on_allow: !self.has_deny,
            found: Bits::default(),
        }
    }

    fn verdict(&self, walk: &Walk<'_>) -> Verdict {
        if walk.found.has(Bits::DENY) {
            Verdict::Deny
        } else if walk.found.has(walk.want) {
            Verdict::Allow
        } else {
            Verdict::NoMatch
        }
    }
}

/// `wild` is false only at the root of a `$` topic. Depth is bounded by the tree's, at
/// most `MAX_LEVELS`.
fn topic_walk(node: &Node, rest: Option<&str>, wild: bool, walk: &mut Walk<'_>) {
    if wild {
        walk.found.add(node.rest);
    }
    let Some(text) = rest else {
        walk.found.add(node.here);
        return;
    };
    let (level, next) = split(text);
    if let Some(child) = node.literal.get(level) {
        topic_walk(child, next, true, walk);
    }
    if let (true, Some(child)) = (wild, &node.plus) {
        if !walk.done() {
            topic_walk(child, next, true, walk);
        }
    }
    for (pieces, child) in &node.templates {
        if walk.done() {
            return;
        }
        if fills(pieces, level, walk.subst) {
            topic_walk(child, next, true, walk);
        }
    }
}

/// As `topic_walk`, but the subscription's own `+` is taken in only by a rule's `+` or
/// `#`, and its `#` only by a rule's `#`.
fn filter_walk(node: &Node, rest: Option<&str>, wild: bool, walk: &mut Walk<'_>) {
    if wild {
        walk.found.add(node.rest);
    }
    let Some(text) = rest else {
        walk.found.add(node.here);
        return;
    };
    let (level, next) = split(text);
    match level {
        "#" => {}
        "+" => {
            if let Some(child) = &node.plus {
                filter_walk(child, next, true, walk);
            }
        }
        _ => {
            if let Some(child) = node.literal.get(level) {
                filter_walk(child, next, true, walk);
            }
            if let (true, Some(child)) = (wild, &node.plus) {
                if !walk.done() {
                    filter_walk(child, next, true, walk);
                }
            }
            for (pieces, child) in &node.templates {
                if walk.done() {
                    return;
                }
                if fills(pieces, level, walk.subst) {
                    filter_walk(child, next, true, walk);
                }
            }
        }
    }
}
