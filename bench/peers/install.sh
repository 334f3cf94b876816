#!/usr/bin/env bash
# Installs the peer systems fogline is benchmarked against (Debian/Ubuntu, as root).
#   bench/peers/install.sh            all of them
#   bench/peers/install.sh kafka ...  only these (mosquitto redis nats rabbitmq kafka zeromq)
# Idempotent: what is present is skipped. Kafka comes from Maven Central into
# bench/peers/.install/kafka/libs (needs a JDK >= 11 and maven, installed here if missing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
peers=("$@")
[ ${#peers[@]} -eq 0 ] && peers=(mosquitto redis nats rabbitmq kafka zeromq)
apt_pkgs=()
need() { command -v "$1" >/dev/null 2>&1 || apt_pkgs+=("$2"); }
# The plots' text needs a TrueType font.
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || apt_pkgs+=(fonts-dejavu-core)
for p in "${peers[@]}"; do
  case $p in
    mosquitto) need mosquitto mosquitto ;;
    redis) need redis-server redis-server ;;
    nats|jetstream) need nats-server nats-server ;;
    rabbitmq) [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || apt_pkgs+=(rabbitmq-server) ;;
    kafka) need java default-jre-headless; need mvn maven ;;
    zeromq) dpkg -s libzmq3-dev >/dev/null 2>&1 || apt_pkgs+=(libzmq3-dev) ;;
    *) echo "install.sh: unknown peer '$p'" >&2; exit 2 ;;
  esac
done
"$here/../../scripts/apt-install.sh" "${apt_pkgs[@]}"
for p in "${peers[@]}"; do
  if [ "$p" = kafka ] && [ ! -f "$here/.install/kafka/libs/.complete" ]; then
    echo "fetching Kafka 3.9.1 jars from Maven Central"
    mkdir -p "$here/.install/kafka/libs"
    mvn -q -B -f "$here/kafka/pom.xml" dependency:copy-dependencies \
      -DoutputDirectory="$here/.install/kafka/libs" -DincludeScope=runtime
    touch "$here/.install/kafka/libs/.complete"
  fi
done
echo "peers installed: ${peers[*]}"
