//! What every command that speaks the native protocol shares: where the node is, TLS and
//! the login, with mosquitto_pub's names (`--cafile`, `--cert`, `--key`, `-u`, `-P`) so a
//! Mosquitto user need not learn new ones.

use std::path::PathBuf;

use clap::Args;
use fogline_client::{Client, ClientOptions, ClientTls};

/// How to reach the node (native protocol).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Connection")]
pub struct ConnectArgs {
    /// Server address (native protocol): HOST:PORT or unix:/PATH.
    #[arg(long, short, default_value = "127.0.0.1:7766", env = "FOGLINE_SERVER")]
    pub server: String,
    /// Connect over TLS (to a `[native] tls_listen` address); needs --cafile.
    #[arg(long)]
    pub tls: bool,
    /// PEM file of the CA that signed the server's certificate; implies --tls.
    #[arg(long, value_name = "FILE", env = "FOGLINE_CAFILE")]
    pub cafile: Option<PathBuf>,
    /// PEM file of this client's certificate, for a server with `require_certificate`;
    /// implies --tls.
    #[arg(long, value_name = "FILE", env = "FOGLINE_CERT", requires = "key")]
    pub cert: Option<PathBuf>,
    /// PEM file of the private key of --cert.
    #[arg(long, value_name = "FILE", env = "FOGLINE_KEY", requires = "cert")]
    pub key: Option<PathBuf>,
    /// The name the server's certificate must hold (default: the host of --server; an IP
    /// address matches the certificate's IP SANs).
    #[arg(long, value_name = "NAME", env = "FOGLINE_TLS_SERVER_NAME")]
    pub tls_server_name: Option<String>,
    /// User name, for a node with users (`[auth] password_file`).
    #[arg(long, short = 'u', value_name = "USER", env = "FOGLINE_USERNAME")]
    pub username: Option<String>,
    /// Password of --username.
    #[arg(
        long,
        short = 'P',
        value_name = "PASS",
        env = "FOGLINE_PASSWORD",
        hide_env_values = true
    )]
    pub password: Option<String>,
}

impl ConnectArgs {
    /// `ClientOptions::default()` with this client name, TLS and login.
    ///
    /// # Errors
    /// TLS asked for without a CA file.
    pub fn options(&self, client_name: &str) -> anyhow::Result<ClientOptions> {
        let tls = if self.tls || self.cafile.is_some() || self.cert.is_some() {
            let Some(cafile) = &self.cafile else {
                anyhow::bail!(
                    "TLS needs --cafile FILE, the CA that signed the server's certificate \
                     (no system CAs are used)"
                );
            };
            Some(ClientTls {
                cafile: cafile.clone(),
                certfile: self.cert.clone(),
                keyfile: self.key.clone(),
                server_name: self.tls_server_name.clone(),
            })
        } else {
            None
        };
        Ok(ClientOptions {
            client_name: client_name.into(),
            tls,
            username: self.username.clone(),
            password: self.password.clone(),
            ..ClientOptions::default()
        })
    }

    /// These settings as the environment variables that give them, for a command that
    /// runs another fogline client (`fogline announce`). (`--tls` needs `--cafile`, which
    /// implies it.)
    pub fn env(&self) -> Vec<(&'static str, std::ffi::OsString)> {
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.as_os_str().to_owned());
        let text = |t: &Option<String>| t.as_ref().map(Into::into);
        [
            ("FOGLINE_SERVER", Some(self.server.clone().into())),
            ("FOGLINE_CAFILE", path(&self.cafile)),
            ("FOGLINE_CERT", path(&self.cert)),
            ("FOGLINE_KEY", path(&self.key)),
            ("FOGLINE_TLS_SERVER_NAME", text(&self.tls_server_name)),
            ("FOGLINE_USERNAME", text(&self.username)),
            ("FOGLINE_PASSWORD", text(&self.password)),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name, value?)))
        .collect()
    }

    /// Connects with `opts` (from [`ConnectArgs::options`]); a failure is one line that
    /// names the server and why.
    ///
    /// # Errors
    /// The connection or its handshake failed.
    pub async fn connect(&self, opts: ClientOptions) -> anyhow::Result<Client> {
        Client::connect(&self.server, opts)
            .await
            .map_err(|e| anyhow::anyhow!("connecting to {}: {e}", self.server))
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        conn: ConnectArgs,
    }

    fn options(args: &[&str]) -> anyhow::Result<ClientOptions> {
        let cli = Cli::try_parse_from(["fogline"].iter().chain(args))?;
        cli.conn.options("test")
    }

    #[test]
    fn the_flags_map_onto_client_options() {
        let o = options(&[]).unwrap();
        assert!(o.tls.is_none() && o.username.is_none() && o.password.is_none());
        assert_eq!(o.client_name, "test");

        let o = options(&["--cafile", "ca.crt", "-u", "ana", "-P", "pw"]).unwrap();
        let tls = o.tls.unwrap();
        assert_eq!(tls.cafile, PathBuf::from("ca.crt"));
        assert_eq!(
            (tls.certfile, tls.keyfile, tls.server_name),
            (None, None, None)
        );
        assert_eq!(o.username.as_deref(), Some("ana"));
        assert_eq!(o.password.as_deref(), Some("pw"));

        let o = options(&[
            "--cafile",
            "ca.crt",
            "--cert",
            "c.crt",
            "--key",
            "c.key",
            "--tls-server-name",
            "node-3",
            "--username",
            "bo",
        ])
        .unwrap();
        let tls = o.tls.unwrap();
        assert_eq!(tls.certfile, Some(PathBuf::from("c.crt")));
        assert_eq!(tls.keyfile, Some(PathBuf::from("c.key")));
        assert_eq!(tls.server_name.as_deref(), Some("node-3"));
        assert_eq!((o.username.as_deref(), o.password), (Some("bo"), None));
    }

    #[test]
    fn the_environment_for_another_client_carries_what_was_given() {
        let cli = Cli::try_parse_from(["fogline", "-s", "h:1", "--cafile", "ca.crt", "-u", "ana"])
            .unwrap();
        let env = cli.conn.env();
        let names: Vec<&str> = env.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            ["FOGLINE_SERVER", "FOGLINE_CAFILE", "FOGLINE_USERNAME"]
        );
        assert_eq!(env[0].1, "h:1");
    }

    #[test]
    fn tls_without_a_ca_file_and_half_a_certificate_are_refused() {
        for args in [&["--tls"][..], &["--cert", "c.crt", "--key", "c.key"]] {
            let e = options(args).unwrap_err().to_string();
            assert!(e.contains("--cafile"), "{args:?}: {e}");
        }
        assert!(options(&["--cafile", "ca.crt", "--cert", "c.crt"]).is_err());
        assert!(options(&["--cafile", "ca.crt", "--key", "c.key"]).is_err());
    }
}
