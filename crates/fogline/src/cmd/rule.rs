//! `fogline rule create|ls|show|status|start|stop|restart|rm` and `fogline pattern
//! add|ls|rm`: a running node's rules and pattern sets, over its admin API (the same
//! routes and JSON as eKuiper's REST API).

use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use clap::{Args, Subcommand};
use fogline_net::tls::{ClientTls, TlsConnector};
use fogline_rules::sink::{Connection, Url};

/// The admin API to talk to.
#[derive(Args, Debug, Clone)]
pub struct Admin {
    /// The node's admin API: host:port, or a URL (`https://host:port` for an `[admin]
    /// tls_listen` address, which needs --admin-cafile).
    #[arg(long, default_value = "127.0.0.1:7767", env = "FOGLINE_ADMIN")]
    pub admin: String,
    /// PEM file of the CA that signed the admin listener's certificate; implies https.
    #[arg(long, env = "FOGLINE_ADMIN_CAFILE")]
    pub admin_cafile: Option<PathBuf>,
    /// PEM file of this client's certificate, for an admin listener with
    /// `require_certificate`.
    #[arg(long, env = "FOGLINE_ADMIN_CERT", requires = "admin_key")]
    pub admin_cert: Option<PathBuf>,
    /// PEM file of that certificate's private key.
    #[arg(long, env = "FOGLINE_ADMIN_KEY", requires = "admin_cert")]
    pub admin_key: Option<PathBuf>,
    /// Print the JSON answers as they are.
    #[arg(long)]
    pub json: bool,
    /// The admin API's token (`[admin] token`).
    #[arg(long, env = "FOGLINE_ADMIN_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// A user of the node's password file (HTTP basic auth), when it authenticates.
    #[arg(long, env = "FOGLINE_ADMIN_USER")]
    pub admin_user: Option<String>,
    /// That user's password.
    #[arg(long, env = "FOGLINE_ADMIN_PASSWORD", hide_env_values = true)]
    pub admin_password: Option<String>,
}

impl Admin {
    /// The Authorization header these options ask for, if any.
    pub fn authorization(&self) -> Option<(String, String)> {
        use base64::Engine as _;
        let value = match (&self.token, &self.admin_user) {
            (Some(t), _) => format!("Bearer {t}"),
            (None, Some(u)) => {
                let pw = self.admin_password.as_deref().unwrap_or("");
                let pair = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{pw}"));
                format!("Basic {pair}")
            }
            (None, None) => return None,
        };
        Some(("authorization".to_owned(), value))
    }

    /// The URL of `path` on the admin API: `--admin` as given when it is a URL, else
    /// `http://` (`https://` with a CA file) and the address.
    pub fn url(&self, path: &str) -> anyhow::Result<Url> {
        let base = self.admin.trim_end_matches('/');
        let url = if let Some((scheme, rest)) = base.split_once("://") {
            if rest.contains('/') {
                anyhow::bail!(
                    "--admin {}: give the node's address, without a path",
                    self.admin
                );
            }
            format!("{}://{rest}{path}", scheme.to_ascii_lowercase())
        } else if self.admin_cafile.is_some() {
            format!("https://{base}{path}")
        } else {
            format!("http://{base}{path}")
        };
        Ok(Url::parse(&url)?)
    }

    /// A connection to the admin API, with the TLS settings an `https://` URL needs.
    pub fn connection(&self, url: Url) -> anyhow::Result<Connection> {
        let tls = match (&self.admin_cafile, url.tls) {
            (Some(cafile), true) => {
                let settings = ClientTls {
                    cafile: cafile.clone(),
                    certfile: self.admin_cert.clone(),
                    keyfile: self.admin_key.clone(),
                    server_name: None,
                };
                Some(TlsConnector::new(&settings, url.host())?)
            }
            (None, true) => anyhow::bail!(
                "{} is an https URL: give --admin-cafile FILE, the CA that signed the admin \
                 listener's certificate",
                self.admin
            ),
            (_, false) if self.admin_cafile.is_some() || self.admin_cert.is_some() => {
                anyhow::bail!(
                    "--admin-cafile and --admin-cert (or FOGLINE_ADMIN_CAFILE, \
                     FOGLINE_ADMIN_CERT) are for an https admin API, not {}",
                    self.admin
                )
            }
            (_, false) => None,
        };
        Ok(Connection::with_tls(url, tls))
    }
}

/// Manage the SQL rules of a running node.
#[derive(Subcommand, Debug)]
pub enum RuleCommand {
    /// Create a rule from eKuiper's JSON: `{"id", "sql", "actions", "options"}`.
    Create {
        /// The rule's JSON (or use --file).
        #[arg(value_name = "JSON")]
        rule: Option<String>,
        /// A file holding the rule's JSON (`-` reads standard input).
        #[arg(long, short)]
        file: Option<String>,
        #[command(flatten)]
        admin: Admin,
    },
    /// One line per rule.
    Ls {
        #[command(flatten)]
        admin: Admin,
    },
    /// A rule as written.
    Show {
        /// The rule's id.
        id: String,
        #[command(flatten)]
        admin: Admin,
    },
    /// A rule's state and counters.
    Status {
        /// The rule's id.
        id: String,
        #[command(flatten)]
        admin: Admin,
    },
    /// Start a stopped rule.
    Start {
        /// The rule's id.
        id: String,
        #[command(flatten)]
        admin: Admin,
    },
    /// Stop a rule (it stays stopped across restarts).
    Stop {
        /// The rule's id.
        id: String,
        #[command(flatten)]
        admin: Admin,
    },
    /// Stop and start a rule.
    Restart {
        /// The rule's id.
        id: String,
        #[command(flatten)]
        admin: Admin,
    },
    /// Delete a rule, its checkpoint and its consumer.
    Rm {
        /// The rule's id.
        id: String,
        #[command(flatten)]
        admin: Admin,
    },
}

/// Manage the pattern sets the matcher operators use.
#[derive(Subcommand, Debug)]
pub enum PatternCommand {
    /// Store a pattern set: one pattern per line of a file.
    Add {
        /// The set's name.
        name: String,
        /// The file (`-` reads standard input).
        file: String,
        /// Match ASCII letters regardless of case.
        #[arg(long)]
        nocase: bool,
        /// Each line is a pattern's bytes in hexadecimal (binary patterns).
        #[arg(long)]
        hex: bool,
        #[command(flatten)]
        admin: Admin,
    },
    /// One line per set.
    Ls {
        #[command(flatten)]
        admin: Admin,
    },
    /// Delete a set.
    Rm {
        /// The set's name.
        name: String,
        #[command(flatten)]
        admin: Admin,
    },
}

/// What the CLI waits for an answer.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Sends one request to the admin API; an error status becomes an error with the API's
/// message.
pub async fn call(
    admin: &Admin,
    method: &str,
    path: &str,
    body: Option<Vec<u8>>,
) -> anyhow::Result<serde_json::Value> {
    let url = admin.url(path)?;
    let body = body.map(Bytes::from).unwrap_or_default();
    let headers: Vec<(String, String)> = admin.authorization().into_iter().collect();
    let resp = admin
        .connection(url)?
        .send(method, &headers, body, TIMEOUT)
        .await
        // (the error names the address)
        .map_err(|e| anyhow::anyhow!("admin API: {e}"))?;
    let v: serde_json::Value = serde_json::from_slice(&resp.body).unwrap_or_else(|_| {
        serde_json::Value::String(String::from_utf8_lossy(&resp.body).into_owned())
    });
    if resp.status >= 400 {
        let msg = v
            .pointer("/error/message")
            .and_then(|m| m.as_str())
            .map(str::to_string)
            .unwrap_or_else(|| v.to_string());
        anyhow::bail!("{msg} (HTTP {})", resp.status);
    }
    Ok(v)
}

fn read_input(inline: Option<String>, file: Option<String>) -> anyhow::Result<Vec<u8>> {
    match (inline, file) {
        (Some(j), None) => Ok(j.into_bytes()),
        (None, Some(f)) if f == "-" => {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut v)?;
            Ok(v)
        }
        (None, Some(f)) => std::fs::read(&f).map_err(|e| anyhow::anyhow!("{f}: {e}")),
        _ => anyhow::bail!("give the rule's JSON or --file, one of them"),
    }
}

fn message(v: &serde_json::Value, admin: &Admin) {
    if admin.json {
        println!("{v}");
    } else if let Some(m) = v.get("message").and_then(|m| m.as_str()) {
        println!("{m}");
    }
}

/// Runs a rule subcommand.
pub fn run(cmd: RuleCommand) -> anyhow::Result<()> {
    crate::cmd::runtime(Some(1))?.block_on(async move {
        match cmd {
            RuleCommand::Create { rule, file, admin } => {
                let body = read_input(rule, file)?;
                let v = call(&admin, "POST", "/api/v1/rules", Some(body)).await?;
                message(&v, &admin);
            }
            RuleCommand::Ls { admin } => {
                let v = call(&admin, "GET", "/api/v1/rules", None).await?;
                if admin.json {
                    println!("{}", serde_json::to_string_pretty(&v)?);
                } else {
                    println!("{:<32} {:<10} {:>8}  reason", "id", "status", "restarts");
                    for r in v.as_array().into_iter().flatten() {
                        println!(
                            "{:<32} {:<10} {:>8}  {}",
                            r["id"].as_str().unwrap_or(""),
                            r["status"].as_str().unwrap_or(""),
                            r["restarts"],
                            r["reason"].as_str().unwrap_or("")
                        );
                    }
                }
            }
            RuleCommand::Show { id, admin } => {
                let v = call(&admin, "GET", &format!("/api/v1/rules/{id}"), None).await?;
                println!("{}", serde_json::to_string_pretty(&v)?);
            }
            RuleCommand::Status { id, admin } => {
                let v = call(&admin, "GET", &format!("/api/v1/rules/{id}/status"), None).await?;
                if admin.json {
                    println!("{}", serde_json::to_string_pretty(&v)?);
                } else {
                    for (k, val) in v.as_object().into_iter().flatten() {
                        println!(
                            "{k:<48} {}",
                            val.as_str().map_or(val.to_string(), str::to_string)
                        );
                    }
                }
            }
            RuleCommand::Start { id, admin } => {
                let path = format!("/api/v1/rules/{id}/start");
                message(&call(&admin, "POST", &path, None).await?, &admin);
            }
            RuleCommand::Stop { id, admin } => {
                let path = format!("/api/v1/rules/{id}/stop");
                message(&call(&admin, "POST", &path, None).await?, &admin);
            }
            RuleCommand::Restart { id, admin } => {
                let path = format!("/api/v1/rules/{id}/restart");
                message(&call(&admin, "POST", &path, None).await?, &admin);
            }
            RuleCommand::Rm { id, admin } => {
                let path = format!("/api/v1/rules/{id}");
                message(&call(&admin, "DELETE", &path, None).await?, &admin);
            }
        }
        Ok(())
    })
}

/// Runs a pattern subcommand.
pub fn run_pattern(cmd: PatternCommand) -> anyhow::Result<()> {
    crate::cmd::runtime(Some(1))?.block_on(async move {
        match cmd {
            PatternCommand::Add {
                name,
                file,
                nocase,
                hex,
                admin,
            } => {
                let text = String::from_utf8(read_input(None, Some(file))?)
                    .map_err(|_| anyhow::anyhow!("the pattern file is not UTF-8"))?;
                let patterns: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
                let body = serde_json::json!({
                    "name": name, "patterns": patterns, "caseInsensitive": nocase, "hex": hex
                });
                let path = format!("/api/v1/patterns/{name}");
                let v = call(&admin, "PUT", &path, Some(body.to_string().into_bytes())).await?;
                message(&v, &admin);
            }
            PatternCommand::Ls { admin } => {
                let v = call(&admin, "GET", "/api/v1/patterns", None).await?;
                if admin.json {
                    println!("{}", serde_json::to_string_pretty(&v)?);
                } else {
                    println!("{:<32} {:>10}", "name", "patterns");
                    for p in v.as_array().into_iter().flatten() {
                        println!(
                            "{:<32} {:>10}",
                            p["name"].as_str().unwrap_or(""),
                            p["patterns"]
                        );
                    }
                }
            }
            PatternCommand::Rm { name, admin } => {
                let path = format!("/api/v1/patterns/{name}");
                message(&call(&admin, "DELETE", &path, None).await?, &admin);
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admin(addr: &str, cafile: Option<&str>) -> Admin {
        Admin {
            admin: addr.into(),
            json: false,
            token: None,
            admin_user: None,
            admin_password: None,
            admin_cafile: cafile.map(PathBuf::from),
            admin_cert: None,
            admin_key: None,
        }
    }

    #[test]
    fn the_admin_address_becomes_a_url() {
        let url = |a: &Admin| a.url("/api/v1/rules").map(|u| (u.tls, u.authority, u.path));
        let rules = "/api/v1/rules".to_string();
        assert_eq!(
            url(&admin("127.0.0.1:7767", None)).unwrap(),
            (false, "127.0.0.1:7767".into(), rules.clone())
        );
        assert_eq!(
            url(&admin("node:7443", Some("ca.crt"))).unwrap(),
            (true, "node:7443".into(), rules.clone())
        );
        assert_eq!(
            url(&admin("HTTPS://node:7443/", None)).unwrap(),
            (true, "node:7443".into(), rules.clone())
        );
        assert!(url(&admin("https://node:7443/api/v1", None)).is_err());
        let plain = admin("http://node:7767", Some("ca.crt"));
        let e = plain.connection(plain.url("/").unwrap()).err().unwrap();
        assert!(e.to_string().contains("FOGLINE_ADMIN_CAFILE"), "{e}");
        let tls = admin("https://node:7443", None);
        let e = tls.connection(tls.url("/").unwrap()).err().unwrap();
        assert!(e.to_string().contains("--admin-cafile"), "{e}");
    }
}
