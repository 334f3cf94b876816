#!/bin/bash
# sc.sh BIN NAME: seed002 fogline 1->1 for 5 s, perf trace -s on the load for 3 s
bin=$1; name=$2
$bin bench seed002 --systems fogline --duration 6s --repetitions 1 --no-progress --out /tmp/s7/sc-$name > /tmp/s7/sc-$name.log 2>&1 &
b=$!
sleep 4
timeout -s INT 3 perf trace -s -p $b -o /tmp/s7/sc-$name.txt 2>/dev/null
wait $b
grep -A12 "Summary" /tmp/s7/sc-$name.txt | head -14
grep "22 B max 1->1 | fogline" /tmp/s7/sc-$name/summary.md
