#!/bin/bash
# tl.sh BIN NAME: native fogline QoS 0 and QoS 1 at 256 B @ 1 kHz (12 s each), perf trace on load + server for 8 s of each cell
bin=$1; name=$2
$bin bench mqtt --systems fogline --size 256 --rate 1000 --duration 12s --repetitions 1 --no-progress --out /tmp/s7/tl-$name > /tmp/s7/tl-$name.log 2>&1 &
b=$!
for i in $(seq 1 80); do p=$(pgrep -f "fogline serve" | head -1); [ -n "$p" ] && break; sleep 0.25; done
echo "load $b server $p"
echo "$b $p" > /tmp/s7/tl-$name.pids
# cell 1 starts after warm-up; trace 3..11 s, then the next cell
sleep 4
timeout -s INT 7 perf trace -p $b,$p -o /tmp/s7/tl-$name-c1.txt 2>/dev/null
# wait for the second cell (QoS 1 256 B); server may restart per cell
sleep 4
p2=$(pgrep -f "fogline serve" | head -1); echo "server2 $p2"; echo "$p2" >> /tmp/s7/tl-$name.pids
sleep 2
timeout -s INT 7 perf trace -p $b,$p2 -o /tmp/s7/tl-$name-c2.txt 2>/dev/null
wait $b
grep -E "p50|cell|QoS" /tmp/s7/tl-$name.log | head
