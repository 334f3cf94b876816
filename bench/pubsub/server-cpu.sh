#!/bin/bash
# server-cpu.sh BIN STORAGE COUNT SIZE [pub flags]: the server's CPU time (perf stat task-clock)
# and page faults for one "fogline pub" run; server pinned to core 0, publisher to core 1.
# CPU time per record is steadier than throughput on a shared machine: compare two builds
# by alternating runs.
BIN=$1; ST=$2; N=$3; SZ=$4; shift 4
D=$(mktemp -d /tmp/fogline-cpu.XXXX)
PORT=$((20000 + RANDOM % 20000))
taskset -c 0 perf stat -x, -e task-clock,page-faults -o $D/stat $BIN serve --storage $ST --data-dir $D/data --threads 1 --listen 127.0.0.1:$PORT --mqtt off >/dev/null 2>&1 &
SP=$!
sleep 0.7
S=$(date +%s.%N)
taskset -c 1 $BIN pub --server 127.0.0.1:$PORT t --count $N --size $SZ "$@" >/dev/null 2>&1
E=$(date +%s.%N)
SRV=$(pgrep -P $SP)
kill -INT $SRV 2>/dev/null; wait $SP
TC=$(grep task-clock $D/stat | cut -d, -f1); PF=$(grep page-faults $D/stat | cut -d, -f1)
echo "$(basename $BIN) $ST n=$N size=$SZ wall=$(echo "$E - $S" | bc | cut -c1-6)s server_ms=$TC faults=$PF"
rm -rf $D
