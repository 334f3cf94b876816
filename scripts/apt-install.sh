#!/usr/bin/env bash
# Installs the given Debian packages that are not installed yet (one `apt-get update`, and
# only when something is missing); uses sudo when not root. Shared by scripts/test.sh,
# bench/peers/install.sh and bench/long-run.sh.
#   scripts/apt-install.sh pkg-config librdkafka-dev ...
set -euo pipefail
missing=()
for p in "$@"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "apt-install.sh: need root (or sudo) to install: ${missing[*]}" >&2
  exit 2
fi
echo "installing: ${missing[*]}"
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
