#!/usr/bin/env bash
# One pub/sub measurement with the fogline CLI: a server pinned to core 0, the
# publisher and N subscribers pinned to core 1 (2-core machine).
#   bench/pubsub/run.sh STORAGE COUNT SIZE [RATE_HZ (0 = max)] [SUBSCRIBERS]
# Prints the publisher's line, one JSON summary per subscriber, and the
# server's peak RSS. Build first: cargo build --release.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
B=${FOGLINE_BIN:-$here/target/release/fogline}
ST=$1; N=$2; SZ=$3; RATE=${4:-0}; SUBS=${5:-1}
PORT=${PORT:-17768}
D=$(mktemp -d)
# FOGLINE_SERVE_ARGS: more `fogline serve` arguments (e.g. --http 127.0.0.1:0).
# shellcheck disable=SC2086 # a list of words
taskset -c 0 "$B" serve --storage "$ST" --data-dir "$D" --listen 127.0.0.1:$PORT --mqtt 127.0.0.1:0 --threads 1 ${FOGLINE_SERVE_ARGS:-} 2>"$D/serve.log" &
SP=$!
trap 'kill $SP 2>/dev/null; wait $SP 2>/dev/null; rm -rf "$D"' EXIT
sleep 0.5
PIDS=()
for i in $(seq "$SUBS"); do
  taskset -c 1 timeout 300 "$B" sub --server 127.0.0.1:$PORT bench/x --count "$N" --json --idle 10s >"$D/sub$i.json" &
  PIDS+=($!)
done
sleep 0.5
taskset -c 1 timeout 300 "$B" pub --server 127.0.0.1:$PORT bench/x --count "$N" --size "$SZ" --rate "$RATE"
for p in "${PIDS[@]}"; do wait "$p"; done
cat "$D"/sub*.json
grep VmHWM /proc/$SP/status
