#!/bin/bash
# trace.sh SYSTEM PGREP-ARGS: one 12 s run at 256 B @ 30 Hz with perf trace on the server
sys=$1; shift
/tmp/fbin2/fogline bench core --systems $sys --size 256 --rate 30 --duration 12s --repetitions 1 --subscribers 1 --no-progress --out /tmp/exp/tr-$sys > /tmp/exp/tr-$sys.log 2>&1 &
b=$!
for i in $(seq 1 60); do p=$(pgrep "$@" | grep -v "^$$\$" | grep -vx "$$" | head -1); [ -n "$p" ] && break; sleep 0.5; done
sleep 4
echo server pid $p; ps -o pid,args -p $p
timeout -s INT 6 perf trace -p $p -o /tmp/exp/tr-$sys.txt 2>/dev/null
wait $b
