//! The brokers of `fogline-bench security`: how each set-up is configured and started (a
//! fresh process per set-up and round, pinned to the server core) and the client that
//! measures it.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::Context;
use fogline_bench::driver::Durability;
use fogline_bench::drivers::mqtt::{MqttDriver, MqttTls};
use fogline_bench::peers::free_ports;

use super::pki::Pki;
use crate::child::{pinned, wait_listening, Proc};

/// One way of running a broker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Setup {
    FoglineTls,
    MosquittoTls,
    FoglinePlain,
    FoglineAcl,
}

impl Setup {
    pub(crate) const ALL: [Setup; 4] = [
        Setup::FoglineTls,
        Setup::MosquittoTls,
        Setup::FoglinePlain,
        Setup::FoglineAcl,
    ];

    /// The name in results.json (and the driver's name).
    pub(crate) fn key(self) -> &'static str {
        match self {
            Setup::FoglineTls => "fogline-tls",
            Setup::MosquittoTls => "mosquitto-tls",
            Setup::FoglinePlain => "fogline-plain",
            Setup::FoglineAcl => "fogline-acl",
        }
    }

    pub(crate) fn part(self) -> &'static str {
        match self {
            Setup::FoglineTls | Setup::MosquittoTls => "tls",
            Setup::FoglinePlain | Setup::FoglineAcl => "acl",
        }
    }
}

/// What the set-ups share.
pub(crate) struct Env {
    pub(crate) fogline: PathBuf,
    pub(crate) mosquitto: PathBuf,
    pub(crate) work: PathBuf,
    pub(crate) certs: Pki,
    pub(crate) tls: MqttTls,
    pub(crate) acl_file: PathBuf,
    pub(crate) passwd_file: PathBuf,
    pub(crate) server_core: Option<usize>,
    /// fogline's `--storage`
    pub(crate) storage: String,
}

/// A broker started for one set-up and round.
pub(crate) struct Server {
    setup: Setup,
    /// The MQTT address the client connects to.
    addr: String,
    dir: PathBuf,
    pub(crate) proc: Proc,
}

impl Server {
    pub(crate) fn start(setup: Setup, env: &Env) -> anyhow::Result<Server> {
        let port = free_ports(3)?;
        let dir = env.work.join(format!("{}-{port}", setup.key()));
        std::fs::create_dir_all(&dir)?;
        let log = dir.join("log");
        let out = std::fs::File::create(&log)?;
        let c = &env.certs;
        let (mut cmd, addr) = if setup == Setup::MosquittoTls {
            let addr = format!("127.0.0.1:{port}");
            let conf = dir.join("mosquitto.conf");
            // start.sh's persistent configuration, on a TLS listener.
            std::fs::write(
                &conf,
                format!(
                    "listener {port} 127.0.0.1\ncafile {}\ncertfile {}\nkeyfile {}\n\
                     allow_anonymous true\npersistence true\npersistence_location {}/\n\
                     autosave_interval 1\nset_tcp_nodelay true\nlog_dest stdout\nuser root\n",
                    c.ca.display(),
                    c.server_cert.display(),
                    c.server_key.display(),
                    dir.display()
                ),
            )?;
            let mut cmd = Command::new(&env.mosquitto);
            cmd.arg("-c").arg(conf);
            (cmd, addr)
        } else {
            let (native, mqtt, tls) = (
                format!("127.0.0.1:{port}"),
                format!("127.0.0.1:{}", port + 1),
                format!("127.0.0.1:{}", port + 2),
            );
            let config = match setup {
                Setup::FoglineTls => format!(
                    "[mqtt]\ntls_listen = [{tls:?}]\n\n[mqtt.tls]\ncafile = {:?}\ncertfile = {:?}\nkeyfile = {:?}\n",
                    c.ca, c.server_cert, c.server_key
                ),
                Setup::FoglineAcl => format!(
                    "[auth]\npassword_file = {:?}\nacl_file = {:?}\nallow_anonymous = false\n",
                    env.passwd_file, env.acl_file
                ),
                _ => String::new(),
            };
            std::fs::write(dir.join("fogline.toml"), config)?;
            let mut cmd = Command::new(&env.fogline);
            cmd.arg("serve")
                .arg("--config")
                .arg(dir.join("fogline.toml"))
                .args([
                    "--listen",
                    &native,
                    "--mqtt",
                    &mqtt,
                    "--storage",
                    &env.storage,
                ])
                // The admin API stays on, as deployed, on a port of its own.
                .args(["--http", "127.0.0.1:0", "--data-dir"])
                .arg(dir.join("data"));
            (
                cmd,
                if setup == Setup::FoglineTls {
                    tls
                } else {
                    mqtt
                },
            )
        };
        cmd.stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        pinned(&mut cmd, env.server_core);
        let mut proc = Proc(cmd.spawn().with_context(|| format!("starting {cmd:?}"))?);
        wait_listening(&addr, &mut proc, setup.key(), &log)?;
        Ok(Server {
            setup,
            addr,
            dir,
            proc,
        })
    }

    pub(crate) fn driver(&self, env: &Env, durability: Durability) -> anyhow::Result<MqttDriver> {
        let d = MqttDriver::new(self.setup.key(), &self.addr, durability)?;
        Ok(match self.setup {
            Setup::FoglineTls | Setup::MosquittoTls => d.with_tls(env.tls.clone()),
            Setup::FoglineAcl => d.with_login(super::acl::USER, super::acl::PASSWORD),
            Setup::FoglinePlain => d,
        })
    }

    /// Stops the broker and deletes its data (a round of fogline's mmap log is gigabytes);
    /// the configuration and the log stay.
    pub(crate) fn stop(self) {
        let Server { dir, proc, .. } = self;
        drop(proc);
        let _ = std::fs::remove_dir_all(dir.join("data"));
        let _ = std::fs::remove_file(dir.join("mosquitto.db"));
    }
}
