"""seed000 over complete rounds only: fogline's median p50 against the best broker's and ZeroMQ's.

    python3 bench/results/checks-2026-11-25/rounds.py bench/results/seed000/results.json 3

Uses rounds 1..N (every system has them), so no system is compared over other rounds than
the rest. The best broker is the lowest median p50 among brokers that lost at most 1 %.
"""
import collections
import json
import statistics as st
import sys

path, last = sys.argv[1], int(sys.argv[2])
runs = json.load(open(path))["results"]
p50 = collections.defaultdict(list)
loss = collections.defaultdict(lambda: [0, 0])
cells = []
for r in runs:
    if r["spec"]["label"] not in cells:
        cells.append(r["spec"]["label"])
    if r["repetition"] > last:
        continue
    k = (r["spec"]["label"], r["system"])
    p50[k].append(r["latency"]["p50_us"])
    loss[k][0] += r["delivery"]["lost"]
    loss[k][1] += r["delivery"]["expected"]
brokers = ["mosquitto", "redis", "nats", "jetstream", "rabbitmq", "kafka"]
print("| cell | fogline p50 us | best broker | fogline / best broker | fogline / ZeroMQ |")
print("| --- | --- | --- | --- | --- |")
for c in cells:
    f = st.median(p50[(c, "fogline")])
    ok = [(st.median(p50[(c, b)]), b) for b in brokers
          if p50[(c, b)] and loss[(c, b)][0] <= 0.01 * loss[(c, b)][1]]
    bv, bn = min(ok)
    z = st.median(p50[(c, "zeromq")])
    print(f"| {c} | {f:.0f} | {bn} {bv:.0f} | {f / bv:.2f} | {f / z:.2f} |")
