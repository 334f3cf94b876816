//! Topic trie: which subscription filters match a topic.
//!
//! One node per filter level; `+` and `#` have their own slots so a lookup
//! walks at most two branches per level. MQTT rules apply: `#` also matches the
//! parent level (`a/#` matches `a`), and topics starting with `$` are not
//! matched by a filter whose first level is a wildcard.

use std::collections::HashMap;

#[derive(Default)]
struct Node {
    children: HashMap<Box<str>, Node>,
    plus: Option<Box<Node>>,
    /// Filters ending in `#` right below this node.
    hash: Vec<u64>,
    /// Filters ending exactly at this node.
    exact: Vec<u64>,
}

impl Node {
    fn is_empty(&self) -> bool {
        self.children.is_empty()
            && self.plus.is_none()
            && self.hash.is_empty()
            && self.exact.is_empty()
    }
}

/// Subscription ids indexed by their topic filter.
#[derive(Default)]
pub struct Trie {
    root: Node,
    len: usize,
}

impl Trie {
    /// Number of (filter, id) entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is subscribed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `id` under `filter` (which the caller has validated).
    pub fn insert(&mut self, filter: &str, id: u64) {
        let mut node = &mut self.root;
        for level in filter.split('/') {
            node = match level {
                "#" => {
                    node.hash.push(id);
                    self.len += 1;
                    return;
                }
                "+" => node.plus.get_or_insert_with(Box::default),
                _ => node.children.entry(level.into()).or_default(),
            };
        }
        node.exact.push(id);
        self.len += 1;
    }

    /// Removes `id` from under `filter`; false when it was not there.
    pub fn remove(&mut self, filter: &str, id: u64) -> bool {
        let levels: Vec<&str> = filter.split('/').collect();
        let removed = remove_at(&mut self.root, &levels, id);
        if removed {
            self.len -= 1;
        }
        removed
    }

    /// Appends the ids of every filter matching `topic` to `out`.
    pub fn matches(&self, topic: &str, out: &mut Vec<u64>) {
        let levels: Vec<&str> = topic.split('/').collect();
        let dollar = topic.starts_with('$');
        walk(&self.root, &levels, 0, dollar, out);
    }
}

fn walk(node: &Node, levels: &[&str], depth: usize, dollar: bool, out: &mut Vec<u64>) {
    let wildcard_ok = !(dollar && depth == 0);
    if wildcard_ok {
        out.extend_from_slice(&node.hash);
    }
    let Some(level) = levels.get(depth) else {
        out.extend_from_slice(&node.exact);
        return;
    };
    if let Some(child) = node.children.get(*level) {
        walk(child, levels, depth + 1, dollar, out);
    }
    if wildcard_ok {
        if let Some(plus) = &node.plus {
            walk(plus, levels, depth + 1, dollar, out);
        }
    }
}

fn remove_at(node: &mut Node, levels: &[&str], id: u64) -> bool {
    let Some((level, rest)) = levels.split_first() else {
        return take(&mut node.exact, id);
    };
    match *level {
        "#" => take(&mut node.hash, id),
        "+" => {
            let Some(plus) = node.plus.as_mut() else {
                return false;
            };
            let removed = remove_at(plus, rest, id);
            if plus.is_empty() {
                node.plus = None;
            }
            removed
        }
        name => {
            let Some(child) = node.children.get_mut(name) else {
                return false;
            };
            let removed = remove_at(child, rest, id);
            if child.is_empty() {
                node.children.remove(name);
            }
            removed
        }
    }
}

fn take(ids: &mut Vec<u64>, id: u64) -> bool {
    match ids.iter().position(|&x| x == id) {
        Some(i) => {
            ids.swap_remove(i);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ids(trie: &Trie, topic: &str) -> Vec<u64> {
        let mut out = Vec::new();
        trie.matches(topic, &mut out);
        out.sort_unstable();
        out
    }

    #[test]
    fn mqtt_examples() {
        let mut t = Trie::default();
        t.insert("sport/tennis/player1/#", 1);
        t.insert("sport/#", 2);
        t.insert("#", 3);
        t.insert("sport/+/player1", 4);
        t.insert("+", 5);
        t.insert("+/+", 6);
        t.insert("/+", 7);
        assert_eq!(ids(&t, "sport/tennis/player1"), vec![1, 2, 3, 4]);
        assert_eq!(ids(&t, "sport/tennis/player1/ranking"), vec![1, 2, 3]);
        assert_eq!(ids(&t, "sport"), vec![2, 3, 5]);
        assert_eq!(ids(&t, "/finance"), vec![3, 6, 7]);
        assert_eq!(ids(&t, "$SYS/x"), Vec::<u64>::new());
    }

    #[test]
    fn remove_prunes() {
        let mut t = Trie::default();
        t.insert("a/+/c", 1);
        t.insert("a/#", 2);
        assert!(t.remove("a/+/c", 1));
        assert!(!t.remove("a/+/c", 1));
        assert!(t.remove("a/#", 2));
        assert!(t.is_empty());
        assert!(t.root.is_empty());
    }

    fn level() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            Just(String::new()),
            Just("$s".to_string()),
        ]
    }

    fn filter() -> impl Strategy<Value = String> {
        (
            prop::collection::vec(prop_oneof![level(), Just("+".to_string())], 0..4),
            any::<bool>(),
        )
            .prop_map(|(mut levels, hash)| {
                if hash || levels.is_empty() {
                    levels.push("#".to_string());
                }
                levels.join("/")
            })
    }

    proptest! {
        /// The trie agrees with the wire crate's reference matcher.
        #[test]
        fn agrees_with_reference(
            filters in prop::collection::vec(filter(), 1..12),
            topic in prop::collection::vec(level(), 1..5),
        ) {
            let topic = topic.join("/");
            let mut t = Trie::default();
            for (i, f) in filters.iter().enumerate() {
                t.insert(f, i as u64);
            }
            let expected: Vec<u64> = filters
                .iter()
                .enumerate()
                .filter(|(_, f)| fogline_wire::filter_matches(f, &topic))
                .map(|(i, _)| i as u64)
                .collect();
            prop_assert_eq!(ids(&t, &topic), expected);
        }
    }
}
