//! Mosquitto's bridge `topic` lines, read by Mosquitto's rules (mosquitto.conf(5), `topic`):
//!
//! ```text
//! PATTERN [[[ out | in | both ] QOS] LOCAL_PREFIX REMOTE_PREFIX]
//! ```
//!
//! Words are separated by spaces; the direction defaults to `out` (any case), the QoS to 0;
//! `""` stands for an empty pattern or prefix. The local filter is LOCAL_PREFIX + PATTERN,
//! the remote one REMOTE_PREFIX + PATTERN. Going out, a topic matching the local filter loses
//! the local prefix and gains the remote one; coming in, the reverse. An empty pattern
//! needs both prefixes (it maps one topic to another). The first line that matches a topic
//! decides its mapping and QoS.
//!
//! Stricter than Mosquitto: a QoS other than `0`, `1` or `2` and words after the remote
//! prefix are refused (Mosquitto reads `1x` as 1 and ignores extra words).

use std::fmt;
use std::str::FromStr;

/// Which way a topic is carried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Local records go to the remote broker.
    Out,
    /// Remote messages come into the local broker.
    In,
    /// Both.
    Both,
}

/// One parsed `topic` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicRule {
    /// The pattern (`None`: `""`).
    pub pattern: Option<String>,
    /// Which way.
    pub direction: Direction,
    /// QoS 0, 1 or 2.
    pub qos: u8,
    /// Prefix on the local side (`None`: `""` or not given).
    pub local_prefix: Option<String>,
    /// Prefix on the remote side.
    pub remote_prefix: Option<String>,
    /// The filter matched locally: local prefix + pattern.
    pub local_filter: String,
    /// The filter subscribed to remotely: remote prefix + pattern.
    pub remote_filter: String,
}

/// What is wrong with a `topic` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopicLineError(String);

impl fmt::Display for TopicLineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TopicLineError {}

fn marker(word: &str) -> Option<String> {
    (word != "\"\"").then(|| word.to_string())
}

impl FromStr for TopicRule {
    type Err = TopicLineError;

    fn from_str(line: &str) -> Result<Self, TopicLineError> {
        let err = |m: String| Err(TopicLineError(format!("topic {line:?}: {m}")));
        let words: Vec<&str> = line.split(' ').filter(|w| !w.is_empty()).collect();
        let Some(&first) = words.first() else {
            return err("empty topic line".into());
        };
        if words.len() > 5 {
            return err("more than PATTERN DIRECTION QOS LOCAL_PREFIX REMOTE_PREFIX".into());
        }
        let pattern = marker(first);
        let direction = match words.get(1).map(|w| w.to_ascii_lowercase()) {
            None => Direction::Out,
            Some(d) if d == "out" => Direction::Out,
            Some(d) if d == "in" => Direction::In,
            Some(d) if d == "both" => Direction::Both,
            Some(d) => return err(format!("direction {d:?} is not out, in or both")),
        };
        let qos = match words.get(2).copied() {
            None => 0,
            Some("0") => 0,
            Some("1") => 1,
            Some("2") => 2,
            Some(q) => return err(format!("QoS {q:?} is not 0, 1 or 2")),
        };
        let local_prefix = words.get(3).and_then(|w| marker(w));
        let remote_prefix = words.get(4).and_then(|w| marker(w));
        for (side, prefix) in [("local", &local_prefix), ("remote", &remote_prefix)] {
            if let Some(p) = prefix {
                if let Err(e) = fogline_wire::validate_topic(p) {
                    return err(format!("{side} prefix {p:?}: {e}"));
                }
            }
        }
        if pattern.is_none() && (local_prefix.is_none() || remote_prefix.is_none()) {
            return err("an empty pattern (\"\") needs both prefixes".into());
        }
        let join = |prefix: &Option<String>| {
            format!(
                "{}{}",
                prefix.as_deref().unwrap_or(""),
                pattern.as_deref().unwrap_or("")
            )
        };
        let (local_filter, remote_filter) = (join(&local_prefix), join(&remote_prefix));
        for (side, filter) in [("local", &local_filter), ("remote", &remote_filter)] {
            if let Err(e) = fogline_wire::validate_filter(filter) {
                return err(format!("{side} prefix and pattern make {filter:?}: {e}"));
            }
        }
        Ok(TopicRule {
            pattern,
            direction,
            qos,
            local_prefix,
            remote_prefix,
            local_filter,
            remote_filter,
        })
    }
}

impl TopicRule {
    /// Whether it carries local records out.
    pub fn is_out(&self) -> bool {
        self.direction != Direction::In
    }

    /// Whether it brings remote messages in.
    pub fn is_in(&self) -> bool {
        self.direction != Direction::Out
    }

    fn remap(topic: &str, from: &Option<String>, to: &Option<String>) -> String {
        let rest = match from {
            Some(p) => topic.strip_prefix(p.as_str()).unwrap_or(topic),
            None => topic,
        };
        format!("{}{rest}", to.as_deref().unwrap_or(""))
    }
}

/// A bridge's topic lines, in configuration order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topics(pub Vec<TopicRule>);

impl Topics {
    /// Reads every line.
    ///
    /// # Errors
    /// The first line that is wrong, quoted.
    pub fn parse<S: AsRef<str>>(lines: &[S]) -> Result<Self, TopicLineError> {
        lines
            .iter()
            .map(|l| l.as_ref().parse())
            .collect::<Result<_, _>>()
            .map(Topics)
    }

    /// The remote topic and QoS of a local record on `topic`, if a line carries it out.
    pub fn outgoing(&self, topic: &str) -> Option<(String, u8)> {
        self.0
            .iter()
            .filter(|r| r.is_out())
            .find(|r| fogline_wire::filter_matches(&r.local_filter, topic))
            .map(|r| {
                let remote = TopicRule::remap(topic, &r.local_prefix, &r.remote_prefix);
                (remote, r.qos)
            })
    }

    /// The local topic of a remote message on `topic`, if a line brings it in.
    pub fn incoming(&self, topic: &str) -> Option<String> {
        self.0
            .iter()
            .filter(|r| r.is_in())
            .find(|r| fogline_wire::filter_matches(&r.remote_filter, topic))
            .map(|r| TopicRule::remap(topic, &r.remote_prefix, &r.local_prefix))
    }

    /// The remote subscriptions: (filter, QoS) of each `in` or `both` line.
    pub fn subscriptions(&self) -> Vec<(String, u8)> {
        self.0
            .iter()
            .filter(|r| r.is_in())
            .map(|r| (r.remote_filter.clone(), r.qos))
            .collect()
    }

    /// Whether any line carries records out.
    pub fn any_out(&self) -> bool {
        self.0.iter().any(TopicRule::is_out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(line: &str) -> TopicRule {
        line.parse().unwrap()
    }

    #[test]
    fn defaults_are_out_and_qos_0() {
        let r = rule("sensors/#");
        assert_eq!(r.direction, Direction::Out);
        assert_eq!(r.qos, 0);
        assert_eq!(
            (r.local_filter.as_str(), r.remote_filter.as_str()),
            ("sensors/#", "sensors/#")
        );
        assert_eq!(rule("a  IN").direction, Direction::In);
        assert_eq!(rule("a Both 2").qos, 2);
    }

    // The table of mosquitto.conf(5): pattern, local prefix, remote prefix -> full local and
    // remote topics, or invalid.
    #[test]
    fn mosquittos_prefix_table() {
        let cases: [(&str, Option<(&str, &str)>); 8] = [
            ("pattern out 0 L/ R/", Some(("L/pattern", "R/pattern"))),
            ("pattern out 0 L/ \"\"", Some(("L/pattern", "pattern"))),
            ("pattern out 0 \"\" R/", Some(("pattern", "R/pattern"))),
            ("pattern out 0 \"\" \"\"", Some(("pattern", "pattern"))),
            ("\"\" out 0 local remote", Some(("local", "remote"))),
            ("\"\" out 0 local \"\"", None),
            ("\"\" out 0 \"\" remote", None),
            ("\"\" out 0 \"\" \"\"", None),
        ];
        for (line, want) in cases {
            let got = line
                .parse::<TopicRule>()
                .ok()
                .map(|r| (r.local_filter, r.remote_filter));
            let want = want.map(|(l, r)| (l.to_string(), r.to_string()));
            assert_eq!(got, want, "{line}");
        }
        // A local prefix alone: the remote side has none.
        assert_eq!(rule("a/# in 1 L/").remote_filter, "a/#");
        assert!("\"\" out 0 local".parse::<TopicRule>().is_err());
    }

    #[test]
    fn bad_lines_are_refused_with_the_line() {
        for line in [
            "",
            "a sideways",
            "a out 3",
            "a out 1x",
            "a out 1 l/+/ r/",
            "a out 1 l/ r/#",
            "a/#/b",
            "a out 1 l/ r/ extra",
        ] {
            let e = line.parse::<TopicRule>().unwrap_err().to_string();
            assert!(e.contains(&format!("{line:?}")), "{e}");
        }
    }

    #[test]
    fn topics_are_remapped_each_way_by_the_first_matching_line() {
        let t = Topics::parse(&[
            "# both 1 local/topic/ remote/topic/",
            "clients/total in 0 test/mosquitto/org/ $SYS/broker/",
            "\"\" out 1 here/one there/single",
            "raw/# out 0",
        ])
        .unwrap();
        assert_eq!(
            t.outgoing("local/topic/a/b"),
            Some(("remote/topic/a/b".into(), 1))
        );
        assert_eq!(t.outgoing("here/one"), Some(("there/single".into(), 1)));
        assert_eq!(t.outgoing("raw/x"), Some(("raw/x".into(), 0)));
        assert_eq!(t.outgoing("other"), None);
        assert_eq!(t.incoming("remote/topic/x"), Some("local/topic/x".into()));
        assert_eq!(
            t.incoming("$SYS/broker/clients/total"),
            Some("test/mosquitto/org/clients/total".into())
        );
        // Out-only lines bring nothing in.
        assert_eq!(t.incoming("there/single"), None);
        assert_eq!(t.incoming("raw/x"), None);
        assert_eq!(
            t.subscriptions(),
            [
                ("remote/topic/#".to_string(), 1),
                ("$SYS/broker/clients/total".to_string(), 0)
            ]
        );
        assert!(t.any_out());
        assert!(!Topics::parse(&["a in"]).unwrap().any_out());
    }
}
