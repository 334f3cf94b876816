"""How the runs from one index on (one sitting, on a new machine) compare with the earlier runs of the
same system and cell: each later run's value over the median of the earlier runs, summarised per
system. p50 in latency cells, delivered msg/s in throughput cells (the rule of `Metric::of` in
crates/fogline-bench/src/report.rs, as in ../checks-2026-11-26/rounds.py).

    python3 sitting-shift.py ../seed003/results.json 866 [END]

The indexes are `runs_before` values of ../seed003/sittings.tsv; END (default: every run) sets
one sitting apart from those after it."""
import collections
import json
import statistics
import sys

path, start = sys.argv[1], int(sys.argv[2])
end = int(sys.argv[3]) if len(sys.argv) > 3 else None
runs = json.load(open(path))["results"]


def metric(r):
    s = r["spec"]
    if s["rate"] == "max" or s["reading"] == "replay" or s["subscribers"] == 0:
        return "msg/s", r["throughput_msgs"]
    return "p50", r["latency"]["p50_us"]


earlier = collections.defaultdict(list)
for r in runs[:start]:
    earlier[(r["system"], r["spec"]["label"])].append(metric(r)[1])
ratios = collections.defaultdict(list)
for r in runs[start:end]:
    kind, value = metric(r)
    ratios[(r["system"], kind)].append(value / statistics.median(earlier[(r["system"], r["spec"]["label"])]))
print("| system | metric | later runs | median later / earlier | range |")
print("| --- | --- | --- | --- | --- |")
for (system, kind), v in sorted(ratios.items()):
    print(f"| {system} | {kind} | {len(v)} | {statistics.median(v):.2f} | {min(v):.2f}-{max(v):.2f} |")
