#!/usr/bin/env bash
# Instructions the server spends per message on the native path at 1 kHz (callgrind counts
# instructions, not time: repeatable whatever else the machine does).
#   cg-native.sh BIN N OUT [SERVE_ARGS...]
# The server (BIN, one runtime thread, mmap storage) runs under callgrind; `fogline sub`
# receives and `fogline pub` sends N paced 256 B records at 1 kHz (the load's binary is
# LOAD_BIN, default BIN). Per message = (Ir at N2 - Ir at N1) / (N2 - N1).
set -u
bin=$1 n=$2 out=$3; shift 3
load=${LOAD_BIN:-$bin}
d=$(mktemp -d)
valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" serve --listen 127.0.0.1:18829 \
  --mqtt 127.0.0.1:0 --storage mmap --data-dir "$d/data" --threads 1 "$@" > "$d/log" 2>&1 &
vpid=$!
for _ in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/18829) 2>/dev/null && break; sleep 0.1; done
"$load" sub bench/x --server 127.0.0.1:18829 --count "$n" --json > "$d/sub.json" &
spid=$!
sleep 1
"$load" pub bench/x --server 127.0.0.1:18829 --count "$n" --size 256 --rate 1000 > /dev/null
wait "$spid"
kill -TERM "$vpid"; wait "$vpid"
echo "$(basename "$bin") $n received $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["received"])' "$d/sub.json")"
grep -E '^(summary|totals):' "$out"
rm -rf "$d"
