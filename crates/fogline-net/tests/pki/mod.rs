//! Test certificates made with the `openssl` command, as a Mosquitto user makes them: a CA,
//! a server certificate for `localhost`/127.0.0.1 and a client certificate, in EC (P-256,
//! SEC1 keys) or RSA (2048-bit, PKCS#1 keys as `openssl genrsa -traditional` writes them).
//! Shared by the TLS tests of fogline-net and fogline (`#[path]`-included there).
// Each test binary that includes this uses only some of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The key type of a set.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Ec,
    Rsa,
}

/// A CA and the certificates it signed, as PEM files in one directory.
pub struct Pki {
    pub dir: PathBuf,
    pub ca: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the openssl command is installed");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn key(dir: &Path, kind: Kind, name: &str) {
    match kind {
        Kind::Ec => openssl(
            dir,
            &[
                "ecparam",
                "-name",
                "prime256v1",
                "-genkey",
                "-noout",
                "-out",
                name,
            ],
        ),
        Kind::Rsa => openssl(dir, &["genrsa", "-traditional", "-out", name, "2048"]),
    }
}

/// Signs `name.key` as `name.crt` with `CN=cn` and the extensions `ext`.
fn sign(dir: &Path, kind: Kind, name: &str, cn: &str, ext: &str) {
    key(dir, kind, &format!("{name}.key"));
    let ext_file = format!("{name}.ext");
    std::fs::write(dir.join(&ext_file), ext).expect("write extensions");
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-key",
            &format!("{name}.key"),
            "-subj",
            &format!("/O=fogline tests/CN={cn}"),
            "-out",
            &format!("{name}.csr"),
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "30",
            "-extfile",
            &ext_file,
            "-out",
            &format!("{name}.crt"),
        ],
    );
}

impl Pki {
    /// Makes a CA named `ca_name` and its server and client (`CN=client_cn`) certificates
    /// in `dir` (created).
    pub fn new(dir: &Path, kind: Kind, ca_name: &str, client_cn: &str) -> Pki {
        std::fs::create_dir_all(dir).expect("pki dir");
        key(dir, kind, "ca.key");
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-new",
                "-key",
                "ca.key",
                "-subj",
                &format!("/CN={ca_name}"),
                "-days",
                "30",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
                "-out",
                "ca.crt",
            ],
        );
        sign(
            dir,
            kind,
            "server",
            "localhost",
            "basicConstraints=CA:FALSE\nsubjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
        );
        sign(
            dir,
            kind,
            "client",
            client_cn,
            "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n",
        );
        Pki {
            dir: dir.to_path_buf(),
            ca: dir.join("ca.crt"),
            server_cert: dir.join("server.crt"),
            server_key: dir.join("server.key"),
            client_cert: dir.join("client.crt"),
            client_key: dir.join("client.key"),
        }
    }
}
