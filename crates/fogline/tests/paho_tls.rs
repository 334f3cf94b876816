//! paho-mqtt (Python, 2.x) with `tls_set` and `username_pw_set` against the real `fogline
//! serve`: over MQTT on TLS and over secure WebSocket, with a user of the password file,
//! and refused with a wrong password. paho is installed by scripts/test.sh.

#[path = "../../fogline-net/tests/pki/mod.rs"]
mod pki;
mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use pki::{Kind, Pki};

/// Connects with TLS (and a client certificate), subscribes, publishes one QoS 1 message
/// and prints what it received, or `refused RC` when the CONNACK refused it.
const CLIENT: &str = r#"
import sys, threading
import paho.mqtt.client as mqtt
host, port, transport, ca, cert, key, user, pw = sys.argv[1:9]
got = threading.Event()
result = {}
def on_connect(c, userdata, flags, rc, props=None):
    if rc != 0:
        result["refused"] = int(rc.value if hasattr(rc, "value") else rc)
        got.set()
        return
    c.subscribe("paho/t", qos=1)
def on_subscribe(c, userdata, mid, rcs, props=None):
    c.publish("paho/t", b"over " + transport.encode(), qos=1)
def on_message(c, userdata, m):
    result["message"] = m.payload.decode()
    got.set()
c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="paho-" + transport,
                protocol=mqtt.MQTTv5, transport=transport)
c.tls_set(ca_certs=ca, certfile=cert, keyfile=key)
c.username_pw_set(user, pw)
c.on_connect, c.on_subscribe, c.on_message = on_connect, on_subscribe, on_message
c.connect(host, int(port))
c.loop_start()
ok = got.wait(20)
c.loop_stop()
if "refused" in result:
    print("refused", result["refused"])
elif ok:
    print(result["message"])
else:
    print("timeout")
"#;

fn banner_address(s: &support::Served, label: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = s.log.lock().unwrap().iter().find_map(|l| {
            let rest = l.strip_prefix("  ")?.strip_prefix(label)?;
            Some(rest.trim().to_string())
        });
        if let Some(a) = found {
            return a;
        }
        assert!(Instant::now() < deadline, "no {label} in the banner");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn paho(addr: &str, transport: &str, p: &Pki, user: &str, pw: &str) -> String {
    let (host, port) = addr.rsplit_once(':').unwrap();
    let out = Command::new("python3")
        .args(["-c", CLIENT, host, port, transport])
        .args([&p.ca, &p.client_cert, &p.client_key])
        .args([user, pw])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "paho (installed by scripts/test.sh): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn config(dir: &Path, p: &Pki) -> std::path::PathBuf {
    let mut users = fogline_auth::passwd::PasswordFile::new();
    users.set("dev", b"dev-pw", 1000).unwrap();
    let passwd = dir.join("passwd");
    users.save(&passwd).unwrap();
    let text = format!(
        "[auth]\npassword_file = {passwd:?}\n\n\
         [mqtt]\ntls_listen = [\"127.0.0.1:0\"]\nwss_listen = [\"127.0.0.1:0\"]\n\
         [mqtt.tls]\ncafile = {:?}\ncertfile = {:?}\nkeyfile = {:?}\nrequire_certificate = true\n",
        p.ca, p.server_cert, p.server_key
    );
    let path = dir.join("fogline.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn paho_with_tls_set_over_mqtts_and_wss() {
    let dir = tempfile::tempdir().unwrap();
    let p = Pki::new(
        &dir.path().join("pki"),
        Kind::Rsa,
        "fogline test CA",
        "paho",
    );
    let cfg = config(dir.path(), &p);
    let data = dir.path().join("data");
    let s = support::serve([
        "--config".as_ref(),
        cfg.as_os_str(),
        "--data-dir".as_ref(),
        data.as_os_str(),
    ]);
    let mqtts = banner_address(&s, "MQTT (TLS)");
    let wss = banner_address(&s, "MQTT (WSS)");
    assert_eq!(paho(&mqtts, "tcp", &p, "dev", "dev-pw"), "over tcp");
    assert_eq!(
        paho(&wss, "websockets", &p, "dev", "dev-pw"),
        "over websockets"
    );
    // MQTT 5: 0x86 bad user name or password.
    assert_eq!(paho(&mqtts, "tcp", &p, "dev", "wrong"), "refused 134");
}
