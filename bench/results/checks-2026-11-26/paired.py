"""Paired by round: in each round, the subject's p50 (default fogline) over the p50 of the
system it is set against in that cell. Without `against`, that is the cell's best broker (the
lowest median p50 over all rounds, among brokers that lost at most 1 %). Rounds ran every
system within a few hours, so a round's ratio compares like with like. Cells without a
latency (throughput cells) are left out.

    python3 bench/results/checks-2026-11-26/paired.py RESULTS_JSON [subject [against]]

e.g. `... bench/results/seed003/results.json fogline fogline-mqtt`.
"""
import collections
import json
import statistics as st
import sys

path = sys.argv[1]
subject = sys.argv[2] if len(sys.argv) > 2 else "fogline"
against = sys.argv[3] if len(sys.argv) > 3 else None
runs = json.load(open(path))["results"]
p50 = collections.defaultdict(dict)
loss = collections.defaultdict(lambda: [0, 0])
cells = []
for r in runs:
    if not (r.get("latency") or {}).get("count"):
        continue
    c = r["spec"]["label"]
    if c not in cells:
        cells.append(c)
    p50[(c, r["system"])][r["repetition"]] = r["latency"]["p50_us"]
    loss[(c, r["system"])][0] += r["delivery"]["lost"]
    loss[(c, r["system"])][1] += r["delivery"]["expected"]
brokers = ["mosquitto", "redis", "nats", "jetstream", "rabbitmq", "kafka"]
head = against or "best broker"
print(f"| cell | {head} | {subject} / it, median of rounds | per round | rounds below 1 |")
print("| --- | --- | --- | --- | --- |")
for c in cells:
    mine = p50[(c, subject)]
    if not mine:
        continue
    if against:
        best = against
    else:
        ok = [(st.median(p50[(c, b)].values()), b) for b in brokers
              if p50[(c, b)] and loss[(c, b)][0] <= 0.01 * loss[(c, b)][1]]
        _, best = min(ok)
    theirs = p50[(c, best)]
    ratios = [mine[k] / theirs[k] for k in sorted(mine) if k in theirs]
    below = sum(x < 1 for x in ratios)
    per = ", ".join(f"{x:.2f}" for x in ratios)
    print(f"| {c} | {best} | {st.median(ratios):.2f} | {per} | {below} of {len(ratios)} |")
