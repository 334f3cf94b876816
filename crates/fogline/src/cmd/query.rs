//! `fogline query`: the records a node's store holds, found by data profile, time and
//! topic (R-Pulsar's query; `GET /api/v1/query`), and `--delete` (its delete action).

use clap::Args;

use crate::cmd::rule::{call, Admin};

/// Query the store of a running node.
#[derive(Args, Debug)]
pub struct QueryArgs {
    /// An interest profile: `sensor=li* alt=100..500 geo~40.05,-74.40,5km @site/#`
    /// (docs/PROFILES.md); none: every record.
    #[arg(long, short, default_value = "")]
    pub profile: String,
    /// The indexed stream; default: the store's only one, or `default`.
    #[arg(long)]
    pub stream: Option<String>,
    /// Records at or after: a duration back from now (`10m`), RFC 3339, or microseconds.
    #[arg(long)]
    pub since: Option<String>,
    /// Records at or before (same forms as --since).
    #[arg(long)]
    pub until: Option<String>,
    /// Only the newest matching record per value of this attribute.
    #[arg(long)]
    pub latest_by: Option<String>,
    /// Records per page.
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
    /// Fetch every page, not only the first.
    #[arg(long)]
    pub all: bool,
    /// Newest first.
    #[arg(long)]
    pub desc: bool,
    /// Delete the selected records from the store instead (the log keeps them until its
    /// retention; consumers replaying the stream still see them).
    #[arg(long)]
    pub delete: bool,
    #[command(flatten)]
    pub admin: Admin,
}

/// Percent-encodes a query-string value.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn path(args: &QueryArgs, after: Option<u64>) -> String {
    let mut p = vec![format!("profile={}", encode(&args.profile))];
    let mut add = |k: &str, v: &Option<String>| {
        if let Some(v) = v {
            p.push(format!("{k}={}", encode(v)));
        }
    };
    add("stream", &args.stream);
    add("since", &args.since);
    add("until", &args.until);
    add("latest_by", &args.latest_by);
    if !args.delete {
        p.push(format!("limit={}", args.limit));
        if args.desc {
            p.push("order=desc".into());
        }
        if let Some(a) = after {
            p.push(format!("after={a}"));
        }
    }
    format!("/api/v1/query?{}", p.join("&"))
}

/// Runs `fogline query`.
pub fn run(args: QueryArgs) -> anyhow::Result<()> {
    crate::cmd::runtime(Some(1))?.block_on(async move {
        if args.delete {
            let v = call(&args.admin, "DELETE", &path(&args, None), None).await?;
            if args.admin.json {
                println!("{v}");
            } else {
                println!("deleted {} records", v["deleted"]);
            }
            return Ok(());
        }
        let mut after = None;
        let mut total = 0u64;
        loop {
            let v = call(&args.admin, "GET", &path(&args, after), None).await?;
            for r in v["records"].as_array().into_iter().flatten() {
                total += 1;
                if args.admin.json {
                    println!("{r}");
                    continue;
                }
                let payload = r["payload"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| {
                        format!("base64:{}", r["payload_base64"].as_str().unwrap_or(""))
                    });
                let time = r["timestamp"]
                    .as_u64()
                    .map(|us| {
                        humantime::format_rfc3339_micros(
                            std::time::UNIX_EPOCH + std::time::Duration::from_micros(us),
                        )
                        .to_string()
                    })
                    .unwrap_or_default();
                println!(
                    "{} {} {} [{}] {}",
                    r["offset"],
                    time,
                    r["topic"].as_str().unwrap_or(""),
                    r["profile"].as_str().unwrap_or(""),
                    payload
                );
            }
            match v["next"].as_u64() {
                Some(n) if args.all => after = Some(n),
                Some(_) => {
                    if !args.admin.json {
                        eprintln!("(more: --all fetches every page)");
                    }
                    break;
                }
                None => break,
            }
        }
        if !args.admin.json {
            eprintln!("{total} records");
        }
        Ok(())
    })
}
