#!/bin/bash
# ab.sh NAME PAIRS A_BIN B_BIN OUT: alternates two fogline executables (A then B, PAIRS times) on the
# mqtt scenario's 1 kHz cells, fogline-mqtt and mosquitto; OUT/NAME-A-1/results.json ...
# Here A = a33c14c, B = c75e3ca; the results were copied as NAME-A1.json ... for ab.py.
set -eu
name=$1 pairs=$2 a=$3 b=$4 out=$5
for i in $(seq 1 "$pairs"); do
  for v in A B; do
    bin=$a; [ $v = B ] && bin=$b
    "$bin" bench mqtt --systems fogline-mqtt,mosquitto --rate 1000 --repetitions 1 --no-progress \
      --out "$out/$name-$v-$i" > "$out/$name-$v-$i.log" 2>&1
  done
done
