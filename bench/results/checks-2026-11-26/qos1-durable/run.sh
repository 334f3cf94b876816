#!/bin/bash
# QoS 1 publish throughput with 0, 10 and 1000 offline persistent MQTT sessions
# subscribed, before (the long run's 745d8af) and after (main) journaling moved to
# routing time. Server on core 0, mosquitto_pub on core 1. Legs ABBA per session count.
# Usage: run.sh OLD_BIN NEW_BIN
set -euo pipefail
old=$1 new=$2
here=$(cd "$(dirname "$0")" && pwd)
port=18931
msgs() { case $1 in 0) echo 50000 ;; 10) echo 20000 ;; *) echo 1000 ;; esac; }
leg() { # bin sessions
  local bin=$1 n=$2 dir m
  dir=$(mktemp -d)
  FOGLINE_LOG=warn taskset -c 0 "$bin" serve --data-dir "$dir" --listen 127.0.0.1:0 \
    --mqtt 127.0.0.1:$port > /dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
  taskset -c 1 python3 "$here/sessions.py" $port "$n"
  m=$(msgs "$n")
  seq -f "payload-%08g" "$m" > "$dir/in.txt"
  local t0 t1
  t0=$(date +%s.%N)
  taskset -c 1 mosquitto_pub -h 127.0.0.1 -p $port -q 1 -t t/x -l < "$dir/in.txt"
  t1=$(date +%s.%N)
  kill "$pid"; wait "$pid" 2>/dev/null || true
  local j; j=$(du -sb "$dir/mqtt" 2>/dev/null | cut -f1)
  rm -rf "$dir"
  python3 -c "import sys;n,m,a,b,j=sys.argv[1:];print(f'{n}\t{m}\t{int(m)/(float(b)-float(a)):.0f}\t{j}')" "$n" "$m" "$t0" "$t1" "$j"
}
printf "build\tsessions\tmessages\tmsg_per_s\tjournal_bytes\n"
for n in 0 10 1000; do
  for b in old new new old; do
    bin=$old; [ $b = new ] && bin=$new
    printf "%s\t" $b; leg "$bin" "$n"
  done
done
