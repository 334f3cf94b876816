#!/usr/bin/env bash
# What scraping /metrics costs a node publishing at its maximum rate.
#   scrape.sh BIN OUT [ROUNDS]
# 1. Throughput: the max22 cell of ab.sh (22 B, 1 -> 1, memory, 5,000,000 records) with and
#    without a scraper that GETs /metrics once a second (curl, pinned with the load to core
#    1), alternating ABBA for ROUNDS rounds. Outputs in OUT/{quiet,scraped}-<round>.txt.
# 2. CPU per scrape: an idle node (core 0) scraped 500 times back to back; the server's
#    CPU time (utime + stime, /proc/PID/stat) before and after, in OUT/cpu-per-scrape.txt.
set -euo pipefail
bin=$1 out=$2 rounds=${3:-5}
here=$(cd "$(dirname "$0")/../../.." && pwd)
http=127.0.0.1:17799
mkdir -p "$out"
cell() { # name scraped?
  local scraper=""
  if [ "$2" = yes ]; then
    ( sleep 0.4; while true; do taskset -c 1 curl -s -o /dev/null "http://$http/metrics"; sleep 1; done ) &
    scraper=$!
  fi
  FOGLINE_BIN=$bin FOGLINE_SERVE_ARGS="--http $http" "$here/bench/pubsub/run.sh" memory 5000000 22 0 1 > "$out/$1.txt" 2>&1
  if [ -n "$scraper" ]; then kill "$scraper"; wait "$scraper" 2>/dev/null || true; fi
}
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then order="quiet scraped"; else order="scraped quiet"; fi
  for leg in $order; do
    echo "$(date -u +%T) round $r $leg"
    if [ "$leg" = scraped ]; then cell "scraped-$r" yes; else cell "quiet-$r" no; fi
  done
done
# CPU per scrape.
d=$(mktemp -d)
taskset -c 0 "$bin" serve --storage memory --data-dir "$d" --listen 127.0.0.1:17768 --mqtt 127.0.0.1:0 --http "$http" --threads 1 2>"$d/log" &
pid=$!
sleep 1.5
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
before=$(ticks)
t0=$(date +%s.%N)
for _ in $(seq 500); do taskset -c 1 curl -s -o /dev/null "http://$http/metrics"; done
t1=$(date +%s.%N)
after=$(ticks)
bytes=$(curl -s "http://$http/metrics" | wc -c)
kill "$pid"; wait "$pid" 2>/dev/null || true
rm -rf "$d"
python3 - "$before" "$after" "$hz" "$t0" "$t1" "$bytes" > "$out/cpu-per-scrape.txt" <<'PY'
import sys
b, a, hz, t0, t1, size = map(float, sys.argv[1:])
cpu = (a - b) / hz
print(f"500 scrapes: server CPU {cpu:.3f} s ({cpu / 500 * 1000:.3f} ms per scrape), "
      f"wall {t1 - t0:.2f} s, {int(size)} bytes per answer; "
      f"at one scrape a second: {cpu / 500 * 100:.3f} % of one core")
PY
cat "$out/cpu-per-scrape.txt"
