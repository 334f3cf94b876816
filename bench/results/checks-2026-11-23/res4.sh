#!/bin/bash
# res4.sh SYSTEM NAME: 1 kHz QoS 0 256 B; the server's user time from the exit of the last read before a send to that send (all system calls traced)
SYS=$1; NAME=$2
W=/tmp/s9/w-$NAME
rm -rf $W /tmp/s9/o-$NAME
/work/scratch/bin/${BIN:-c316567}/fogline bench mqtt --quick --systems $SYS --rate 1000 --size 256 --duration 12s --no-progress --out /tmp/s9/o-$NAME --work-dir $W > /tmp/s9/b-$NAME.log 2>&1 &
B=$!
for i in $(seq 100); do
  P=$( (pgrep -f "serve.*$W"; pgrep -x mosquitto) | head -1)
  [ -n "$P" ] && break; sleep 0.1
done
sleep 4
perf record -e raw_syscalls:sys_enter -e raw_syscalls:sys_exit -o /tmp/s9/sc-$NAME.data -p $P -- sleep 5 2>&1 | tail -1
wait $B
grep "1000 Hz |" /tmp/s9/o-$NAME/summary.md | grep -v "p50 us"
perf script --ns -i /tmp/s9/sc-$NAME.data -F time,event,trace 2>/dev/null | python3 "$(dirname "$0")"/res4.py
