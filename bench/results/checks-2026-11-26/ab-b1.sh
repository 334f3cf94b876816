#!/bin/bash
# ABBA A/B of seed003's (b) 100 producers x 1 B cell, 3 repetitions per leg: old = the long
# run's build of 745d8af, new = $2. Usage: ab-b1.sh OUT_DIR NEW_BINARY SYSTEMS (comma-separated).
# Each leg's results.json and summary.md land in OUT_DIR/{old-1,new-1,new-2,old-2}.
set -e
OLD=/work/benchbin/fogline-745d8af
out=$(cd "$1" && pwd)
NEW=$2
systems=$3
root=$(git -C "$out" rev-parse --show-toplevel)
for leg in "old-1 $OLD" "new-1 $NEW" "new-2 $NEW" "old-2 $OLD"; do
  set -- $leg
  echo "== $1 ($2) $(date -u +%FT%TZ)"
  "$2" bench seed003 --systems "$systems" --size 1 --repetitions 3 --no-progress \
    --out "$out/$1" --peers-dir "$root/bench/peers"
done
