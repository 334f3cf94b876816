//! `fogline bridge ls|status`: a running node's bridges (state, counts, lag, last error),
//! over its admin API (`GET /api/v1/bridges[/{name}]`).

use clap::Subcommand;
use serde_json::Value;

use crate::cmd::rule::{call, Admin};

/// Inspect the bridges of a running node.
#[derive(Subcommand, Debug)]
pub enum BridgeCommand {
    /// One line per bridge: state, records carried, lag, errors, last error.
    Ls {
        #[command(flatten)]
        admin: Admin,
    },
    /// Every field of one bridge's status.
    Status {
        /// The bridge's name.
        name: String,
        #[command(flatten)]
        admin: Admin,
    },
}

/// Runs a bridge subcommand.
pub fn run(cmd: BridgeCommand) -> anyhow::Result<()> {
    crate::cmd::runtime(Some(1))?.block_on(async move {
        match cmd {
            BridgeCommand::Ls { admin } => {
                let v = call(&admin, "GET", "/api/v1/bridges", None).await?;
                if admin.json {
                    println!("{}", serde_json::to_string_pretty(&v)?);
                } else {
                    print!("{}", table(&v));
                }
            }
            BridgeCommand::Status { name, admin } => {
                let path = format!("/api/v1/bridges/{}", encode(&name));
                let v = call(&admin, "GET", &path, None).await?;
                if admin.json {
                    println!("{}", serde_json::to_string_pretty(&v)?);
                } else {
                    print!("{}", fields(&v));
                }
            }
        }
        Ok(())
    })
}

/// The `ls` table of an `/api/v1/bridges` answer.
fn table(v: &Value) -> String {
    let mut out = format!(
        "{:<20} {:<10} {:<10} {:>12} {:>12} {:>10} {:>8}  last error\n",
        "name", "kind", "state", "records", "lag", "lag (s)", "errors"
    );
    for b in v["bridges"].as_array().into_iter().flatten() {
        out += &format!(
            "{:<20} {:<10} {:<10} {:>12} {:>12} {:>10.1} {:>8}  {}\n",
            text(&b["name"]),
            text(&b["kind"]),
            text(&b["state"]),
            // As strings: a JSON value's Display ignores width.
            text(&b["records"]),
            text(&b["lag_records"]),
            b["lag_seconds"].as_f64().unwrap_or(0.0),
            text(&b["errors"]),
            text(&b["last_error"]),
        );
    }
    out
}

/// One line per field of a bridge's status; times (`*_us`) also as RFC 3339.
fn fields(v: &Value) -> String {
    let mut out = String::new();
    for (k, val) in v.as_object().into_iter().flatten() {
        let shown = match (k.ends_with("_us"), val.as_u64()) {
            (true, Some(0)) => "never".to_string(),
            (true, Some(us)) => humantime::format_rfc3339_micros(
                std::time::UNIX_EPOCH + std::time::Duration::from_micros(us),
            )
            .to_string(),
            _ if val.is_null() => "-".to_string(),
            _ => text(val),
        };
        out += &format!("{k:<16} {shown}\n");
    }
    out
}

/// A JSON value as plain text: strings unquoted, `null` empty.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Percent-encodes a path segment (bridge names are the user's).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_table_has_a_line_per_bridge_with_its_last_error() {
        let v = json!({"bridges": [{
            "name": "core", "kind": "kafka_out", "state": "down", "records": 7,
            "lag_records": 3, "lag_seconds": 2.25, "errors": 4,
            "last_error": "connection refused"
        }]});
        let t = table(&v);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 2, "{t}");
        let words: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            words,
            [
                "core",
                "kafka_out",
                "down",
                "7",
                "3",
                "2.2",
                "4",
                "connection",
                "refused"
            ]
        );
        // Numbers are right-aligned under their heads.
        for (head, value) in [("records", "7"), ("lag", "3"), ("errors", "4")] {
            let end = lines[0].find(&format!(" {head} ")).unwrap() + 1 + head.len();
            assert_eq!(&lines[1][end - value.len()..end], value, "{head} in\n{t}");
        }
    }

    #[test]
    fn status_shows_times_and_absent_values_for_people() {
        let v = json!({"name": "core", "last_error": null, "last_error_us": 0,
                       "state_since_us": 1_700_000_000_000_000u64});
        let f = fields(&v);
        assert!(f.contains("last_error       -\n"), "{f}");
        assert!(f.contains("last_error_us    never\n"), "{f}");
        assert!(f.contains("state_since_us   2023-11-14T22:13:20"), "{f}");
    }
}
