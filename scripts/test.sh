#!/usr/bin/env bash
# Runs every check fogline has, on a fresh Debian machine or a developer's:
# installs what the tests need (apt, pip, cargo fetch), then formatting,
# clippy and the whole test suite. Safe to run again: installed things are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

# System packages: clients the tests drive, C libraries the comparison engines
# link (Hyperscan, librdkafka, libzmq), kcat (an independent Kafka client the bridge
# tests read Kafka with), nftables (their network partition), openssl and curl (the TLS
# tests make certificates as a Mosquitto user does, and fetch over HTTPS), a real Prometheus server and promtool (the
# metrics test), and Chromium (the dashboard's headless-browser test).
APT_PACKAGES=(pkg-config mosquitto-clients kcat nftables openssl curl libhyperscan-dev librdkafka-dev libzmq3-dev prometheus chromium)
./scripts/apt-install.sh "${APT_PACKAGES[@]}"

# The peer systems the benchmark drivers are tested against (Mosquitto, Redis,
# NATS, RabbitMQ, Kafka jars from Maven Central, ZeroMQ).
./bench/peers/install.sh

# Python clients used by the MQTT interoperability tests.
python3 -c 'import paho.mqtt' 2>/dev/null || python3 -m pip install -q 'paho-mqtt>=2,<3'

# playwright-core (from the lockfile) drives Debian's Chromium in the browser test.
npm ci --prefix tests/browser --no-audit --no-fund --silent

cargo fetch
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --all-features -- -D warnings
# The full-disk tests mount a small tmpfs. Where this machine can, they must; where it
# cannot (not root, no CAP_SYS_ADMIN), they are skipped, and said to be here.
probe=$(mktemp -d)
if mount -t tmpfs -o size=64k,huge=never tmpfs "$probe" 2>/dev/null; then
  umount "$probe"
  export FOGLINE_TEST_MOUNT=1
else
  echo "test.sh: cannot mount a tmpfs here: the full-disk tests (fogline-mqtt/tests/full_disk.rs) are skipped" >&2
fi
rmdir "$probe"
# The Prometheus test must run, not skip, here: prometheus is installed above.
export FOGLINE_TEST_PROMETHEUS=1
# So must the bridge tests against a real Kafka (its jars are installed above).
export FOGLINE_TEST_KAFKA=1
# The network-partition test drops packets with nftables; where this machine lets us add a
# table (root), it must run.
if nft add table inet fogline_probe 2>/dev/null; then
  nft delete table inet fogline_probe
  export FOGLINE_TEST_NETFAULT=1
else
  echo "test.sh: cannot add nftables rules here: the network-partition test is skipped" >&2
fi
# The MQTT bridge tests must run against a real Mosquitto: it is installed above.
export FOGLINE_TEST_MOSQUITTO=1
cargo test --workspace --all-features
# The dashboard in headless Chromium, against the binary the tests built.
node tests/browser/dashboard.test.mjs target/debug/fogline
# Exact match equality of fogline-match with aho-corasick on every shared pattern set and
# corpus (about 50 MB of scanning: in release, it takes seconds).
cargo test --release -p fogline-match-compare --all-features --test data -- --ignored

# The Python SDK (python/): installed as a user would (pip install ./python), then its
# pytest suite against the debug fogline binary the workspace tests built above.
python3 -m pip install -q ./python 'pytest>=7' 'nats-py>=2.6'
FOGLINE_BIN="${FOGLINE_BIN:-$PWD/target/debug/fogline}" python3 -m pytest -q python/tests
