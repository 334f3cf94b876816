#!/bin/bash
# pf.sh BIN NAME: perf profile of the fogline server in seed004's 100 kB cell
bin=$1; name=$2
$bin bench seed004 --systems fogline --size 100000 --duration 10s --repetitions 1 --no-progress --work-dir /tmp/s8/w-$name --out /tmp/s8/pf-$name > /tmp/s8/pf-$name.log 2>&1 &
b=$!
for i in $(seq 1 80); do p=$(pgrep -f "serve.*/tmp/s8/w-$name" | head -1); [ -n "$p" ] && break; sleep 0.25; done
sleep 3
timeout -s INT 5 perf record -F 2000 -g -p $p -o /tmp/s8/pf-$name.data 2>/dev/null
wait $b
grep "100000 B" /tmp/s8/pf-$name.log | tail -1
