#!/bin/bash
# trl.sh SYSTEM: one 12 s run at 256 B @ 30 Hz with perf trace on the load generator (this bench process)
sys=$1
/tmp/fbin/fogline bench core --systems $sys --size 256 --rate 30 --duration 12s --repetitions 1 --subscribers 1 --no-progress --out /tmp/exp/trl-$sys > /tmp/exp/trl-$sys.log 2>&1 &
b=$!
sleep 5
timeout -s INT 6 perf trace -p $b -o /tmp/exp/trl-$sys.txt 2>/dev/null
wait $b
