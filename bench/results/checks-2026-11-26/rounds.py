"""A scenario over chosen rounds: each subject's median against the best broker's and ZeroMQ's,
p50 in latency cells, delivered msg/s in throughput cells (max rate, replay, or no subscriber:
the rule of `Metric::of` in crates/fogline-bench/src/report.rs).

    python3 bench/results/checks-2026-11-26/rounds.py bench/results/seed000/results.json 1-5
    python3 bench/results/checks-2026-11-26/rounds.py bench/results/seed000/results.json 5 fogline-mqtt
    python3 bench/results/checks-2026-11-26/rounds.py bench/results/seed003/results.json 1-8

ROUNDS is `N` (that round alone) or `A-B`. Round 5 of seed000 was measured for every system
in one sitting (2026-11-26), so it compares the systems on one day; rounds 1-5 give the full
medians. The best broker is the best median among brokers that lost at most 1 %. Also
prints each subject's loss over those rounds.
"""
import collections
import json
import statistics as st
import sys

path, rounds = sys.argv[1], sys.argv[2]
subject = sys.argv[3] if len(sys.argv) > 3 else "fogline"
lo, _, hi = rounds.partition("-")
lo, hi = int(lo), int(hi or lo)
runs = json.load(open(path))["results"]
value = collections.defaultdict(list)


def throughput(spec):
    return spec["rate"] == "max" or spec["reading"] == "replay" or spec["subscribers"] == 0


throughput_cells = set()
loss = collections.defaultdict(lambda: [0, 0])
cells = []
for r in runs:
    if r["spec"]["label"] not in cells:
        cells.append(r["spec"]["label"])
    if not lo <= r["repetition"] <= hi:
        continue
    k = (r["spec"]["label"], r["system"])
    if throughput(r["spec"]):
        throughput_cells.add(r["spec"]["label"])
        value[k].append(r["throughput_msgs"])
    else:
        value[k].append(r["latency"]["p50_us"])
    loss[k][0] += r["delivery"]["lost"]
    loss[k][1] += r["delivery"]["expected"]
brokers = ["mosquitto", "redis", "nats", "jetstream", "rabbitmq", "kafka"]
print(f"rounds {lo}-{hi}, subject {subject}")
print(f"| cell | metric | {subject} | runs | lost | best broker | / best broker | / ZeroMQ |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for c in cells:
    v = value[(c, subject)]
    if not v:
        continue
    f = st.median(v)
    ok = [(st.median(value[(c, b)]), b) for b in brokers
          if value[(c, b)] and loss[(c, b)][0] <= 0.01 * loss[(c, b)][1]]
    metric, pick = ("msg/s", max) if c in throughput_cells else ("p50 us", min)
    bv, bn = pick(ok)
    z = f"{f / st.median(value[(c, 'zeromq')]):.2f}" if value[(c, "zeromq")] else "-"
    lost, expected = loss[(c, subject)]
    print(f"| {c} | {metric} | {f:.0f} | {len(v)} | {lost}/{expected} | {bn} {bv:.0f} | {f / bv:.2f} | {z} |")
