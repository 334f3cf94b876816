//! `fogline function store|ls|show|start|stop|rm|instances`: a running node's functions on
//! demand (R-Pulsar's store_function, start_function, stop_function, delete), over its
//! admin API (`/api/v1/functions`).

use base64::Engine as _;
use clap::{ArgGroup, Subcommand};
use serde_json::{json, Map, Value};

use crate::cmd::rule::{call, Admin};

/// Manage the functions on demand of a running node.
#[derive(Subcommand, Debug)]
pub enum FunctionCommand {
    /// Store (or replace) a function: a process (`--command`) or a wasm module (`--wasm`).
    #[command(group(ArgGroup::new("what").required(true).args(["command", "wasm"])))]
    Store {
        /// The function's name: 1 to 64 of A-Z a-z 0-9 _ -.
        name: String,
        /// A process function: the program, fed one record per stdin line.
        #[arg(long)]
        command: Option<String>,
        /// An argument of the program (repeat it; `--arg -c` works).
        #[arg(long = "arg", allow_hyphen_values = true, conflicts_with = "wasm")]
        args: Vec<String>,
        /// A wasm function: the module file (binary format).
        #[arg(long)]
        wasm: Option<String>,
        /// A profile attribute `k=v` (repeat it).
        #[arg(long = "attr", value_parser = attr)]
        attrs: Vec<(String, String)>,
        /// Wasm: most bytes its memory may grow to.
        #[arg(long, conflicts_with = "command")]
        memory_bytes: Option<u64>,
        /// Wasm: fuel given to each record.
        #[arg(long, conflicts_with = "command")]
        fuel: Option<u64>,
        /// Process: records waiting for its stdin.
        #[arg(long, conflicts_with = "wasm")]
        queue: Option<usize>,
        /// Process: restarts in a row before the instance is failed.
        #[arg(long, conflicts_with = "wasm")]
        max_restarts: Option<u32>,
        #[command(flatten)]
        admin: Admin,
    },
    /// One line per stored function.
    Ls {
        #[command(flatten)]
        admin: Admin,
    },
    /// A function as stored, with its instances.
    Show {
        /// The function's name.
        name: String,
        #[command(flatten)]
        admin: Admin,
    },
    /// Start a function on a source, publishing its results to an output topic.
    Start {
        /// The function's name.
        name: String,
        /// The topic filter it reads.
        #[arg(long)]
        source: String,
        /// The topic it publishes to.
        #[arg(long)]
        output: String,
        #[command(flatten)]
        admin: Admin,
    },
    /// Stop every running instance of a function.
    Stop {
        /// The function's name.
        name: String,
        #[command(flatten)]
        admin: Admin,
    },
    /// Delete a function (refused while it runs, unless --force, which stops it).
    Rm {
        /// The function's name.
        name: String,
        /// Stop its running instances first.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        admin: Admin,
    },
    /// Every instance, running or recently ended, with its counters.
    Instances {
        #[command(flatten)]
        admin: Admin,
    },
}

fn attr(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or("expected k=v")?;
    Ok((k.to_string(), v.to_string()))
}

/// The JSON `PUT /api/v1/functions/{name}` takes.
fn upload(cmd: &FunctionCommand) -> anyhow::Result<Value> {
    let FunctionCommand::Store {
        name,
        command,
        args,
        wasm,
        attrs,
        memory_bytes,
        fuel,
        queue,
        max_restarts,
        ..
    } = cmd
    else {
        unreachable!("only store uploads");
    };
    let profile: Map<String, Value> = attrs.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    let mut kind = Map::new();
    let mut body = json!({ "name": name, "profile": profile });
    let mut set = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            kind.insert(k.to_string(), v);
        }
    };
    if let Some(file) = wasm {
        let module = std::fs::read(file).map_err(|e| anyhow::anyhow!("{file}: {e}"))?;
        body["module"] = json!(base64::engine::general_purpose::STANDARD.encode(module));
        set("type", Some(json!("wasm")));
        set("memory_bytes", memory_bytes.map(Value::from));
        set("fuel_per_record", fuel.map(Value::from));
    } else {
        set("type", Some(json!("process")));
        set("command", command.clone().map(Value::from));
        set("args", Some(json!(args)));
        set("queue", queue.map(Value::from));
        set("max_restarts", max_restarts.map(Value::from));
    }
    body["kind"] = Value::Object(kind);
    Ok(body)
}

fn message(v: &Value, admin: &Admin) {
    if admin.json {
        println!("{v}");
    } else if let Some(m) = v.get("message").and_then(|m| m.as_str()) {
        println!("{m}");
    }
}

fn instances_table(v: &Value) {
    println!(
        "{:>6} {:<20} {:<8} {:>10} {:>10} {:>8} {:>8}  source -> output",
        "id", "function", "state", "in", "out", "failures", "restarts"
    );
    for i in v.as_array().into_iter().flatten() {
        println!(
            "{:>6} {:<20} {:<8} {:>10} {:>10} {:>8} {:>8}  {} -> {}",
            i["id"],
            i["function"].as_str().unwrap_or(""),
            i["state"].as_str().unwrap_or(""),
            i["records_in"],
            i["records_out"],
            i["failures"],
            i["restarts"],
            i["source"].as_str().unwrap_or(""),
            i["output"].as_str().unwrap_or("")
        );
    }
}

/// Runs a function subcommand.
pub fn run(cmd: FunctionCommand) -> anyhow::Result<()> {
    crate::cmd::runtime(Some(1))?.block_on(async move {
        match &cmd {
            FunctionCommand::Store { name, admin, .. } => {
                let body = upload(&cmd)?.to_string().into_bytes();
                let path = format!("/api/v1/functions/{name}");
                message(&call(admin, "PUT", &path, Some(body)).await?, admin);
            }
            FunctionCommand::Ls { admin } => {
                let v = call(admin, "GET", "/api/v1/functions", None).await?;
                if admin.json {
                    println!("{}", serde_json::to_string_pretty(&v)?);
                    return Ok(());
                }
                println!("{:<32} {:<8} {:>8}  profile", "name", "kind", "running");
                for f in v.as_array().into_iter().flatten() {
                    let profile: Vec<String> = f["profile"]
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                        .collect();
                    println!(
                        "{:<32} {:<8} {:>8}  {}",
                        f["name"].as_str().unwrap_or(""),
                        f["kind"].as_str().unwrap_or(""),
                        f["running"],
                        profile.join(",")
                    );
                }
            }
            FunctionCommand::Show { name, admin } => {
                let path = format!("/api/v1/functions/{name}");
                let v = call(admin, "GET", &path, None).await?;
                println!("{}", serde_json::to_string_pretty(&v)?);
            }
            FunctionCommand::Start {
                name,
                source,
                output,
                admin,
            } => {
                let body = json!({ "source": source, "output": output });
                let path = format!("/api/v1/functions/{name}/start");
                let body = Some(body.to_string().into_bytes());
                message(&call(admin, "POST", &path, body).await?, admin);
            }
            FunctionCommand::Stop { name, admin } => {
                let path = format!("/api/v1/functions/{name}/stop");
                message(&call(admin, "POST", &path, None).await?, admin);
            }
            FunctionCommand::Rm { name, force, admin } => {
                let path = format!("/api/v1/functions/{name}?force={force}");
                message(&call(admin, "DELETE", &path, None).await?, admin);
            }
            FunctionCommand::Instances { admin } => {
                let v = call(admin, "GET", "/api/v1/functions/instances", None).await?;
                if admin.json {
                    println!("{}", serde_json::to_string_pretty(&v)?);
                } else {
                    instances_table(&v);
                }
            }
        }
        Ok(())
    })
}
