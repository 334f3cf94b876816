#!/usr/bin/env bash
# Interleaved A/B of the core data path (bench/pubsub/run.sh): OLD and NEW fogline
# binaries, alternating ABBA for ROUNDS rounds, server pinned to core 0 and the CLI load to
# core 1 (run.sh does the pinning). Each run's output goes to OUT/<cell>-<leg>-<round>.txt.
#   ab.sh OLD NEW OUT [ROUNDS]
# Cells: max22 = 22 B at maximum rate, 1 -> 1, memory storage, 5,000,000 records;
#        khz256 = 256 B at 1 kHz, 1 -> 1, mmap storage, 10,000 records.
# NEW runs with its admin API on (FOGLINE_SERVE_ARGS="--http 127.0.0.1:0"), as deployed.
set -euo pipefail
old=$1 new=$2 out=$3 rounds=${4:-5}
here=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$out"
run() { # leg binary cell round
  local args=""
  [ "$1" = new ] && args="--http 127.0.0.1:0"
  case $3 in
    max22) FOGLINE_BIN=$2 FOGLINE_SERVE_ARGS=$args "$here/bench/pubsub/run.sh" memory 5000000 22 0 1 ;;
    khz256) FOGLINE_BIN=$2 FOGLINE_SERVE_ARGS=$args "$here/bench/pubsub/run.sh" mmap 10000 256 1000 1 ;;
  esac > "$out/$3-$1-$4.txt" 2>&1
}
for r in $(seq "$rounds"); do
  for cell in max22 khz256; do
    if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
    for leg in $order; do
      bin=$old; [ "$leg" = new ] && bin=$new
      echo "$(date -u +%T) round $r $cell $leg"
      run "$leg" "$bin" "$cell" "$r"
    done
  done
done
