//! One CA and one server certificate for `localhost` / 127.0.0.1, made with the `openssl`
//! command as a Mosquitto user makes them (and as fogline's TLS tests do): RSA 2048 keys,
//! PKCS#1 (`openssl genrsa -traditional`), which both brokers read.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{ensure, Context};

/// The PEM files both brokers are configured with.
pub(crate) struct Certificates {
    pub(crate) ca: PathBuf,
    pub(crate) cert: PathBuf,
    pub(crate) key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .context("running openssl (Debian package openssl)")?;
    ensure!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// Makes `ca.crt` and `server.crt` / `server.key` in `dir` (created).
pub(crate) fn make(dir: &Path) -> anyhow::Result<Certificates> {
    std::fs::create_dir_all(dir)?;
    openssl(dir, &["genrsa", "-traditional", "-out", "ca.key", "2048"])?;
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-new",
            "-key",
            "ca.key",
            "-subj",
            "/CN=fogline-bench CA",
            "-days",
            "30",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-out",
            "ca.crt",
        ],
    )?;
    openssl(
        dir,
        &["genrsa", "-traditional", "-out", "server.key", "2048"],
    )?;
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-key",
            "server.key",
            "-subj",
            "/O=fogline-bench/CN=localhost",
            "-out",
            "server.csr",
        ],
    )?;
    std::fs::write(
        dir.join("server.ext"),
        "basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )?;
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "30",
            "-extfile",
            "server.ext",
            "-out",
            "server.crt",
        ],
    )?;
    Ok(Certificates {
        ca: dir.join("ca.crt"),
        cert: dir.join("server.crt"),
        key: dir.join("server.key"),
    })
}
