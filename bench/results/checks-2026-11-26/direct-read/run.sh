#!/bin/bash
# ABBA A/B of seed003's (b) 100 producers x 1 B cell, native fogline with Mosquitto beside it
# in every leg, 3 repetitions per leg: old = the long run's build of 745d8af, new = a release
# build (`cargo build --release -p fogline --features full`) with direct reads in the client
# ($1). Each leg's results.json and summary.md land beside this script (old-1, new-1, new-2,
# old-2).
set -e
OLD=/work/benchbin/fogline-745d8af
NEW=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel)
for leg in "old-1 $OLD" "new-1 $NEW" "new-2 $NEW" "old-2 $OLD"; do
  set -- $leg
  echo "== $1 ($2) $(date -u +%FT%TZ)"
  "$2" bench seed003 --systems fogline,mosquitto --size 1 --repetitions 3 --no-progress \
    --out "$here/$1" --peers-dir "$root/bench/peers"
done
