#!/bin/bash
# ABBA A/B of seed003's (b) 100 producers x 1 B cell, native fogline only, 3 repetitions per leg:
# old = the long run's build of 745d8af, new = a release build of main ($1).
set -e
OLD=/work/benchbin/fogline-745d8af
NEW=$1
cd /work/main
for leg in "old-1 $OLD" "new-1 $NEW" "new-2 $NEW" "old-2 $OLD"; do
  set -- $leg
  echo "== $1 ($2) $(date -u +%FT%TZ)"
  "$2" bench seed003 --systems fogline --size 1 --repetitions 3 --no-progress --out /work/ab/$1 --peers-dir /work/main/bench/peers
done
