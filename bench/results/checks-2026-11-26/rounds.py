"""seed000 over chosen rounds: each subject's median p50 against the best broker's and ZeroMQ's.

    python3 bench/results/checks-2026-11-26/rounds.py bench/results/seed000/results.json 1-5
    python3 bench/results/checks-2026-11-26/rounds.py bench/results/seed000/results.json 5 fogline-mqtt

ROUNDS is `N` (that round alone) or `A-B`. Round 5 of seed000 was measured for every system
in one sitting (2026-11-26), so it compares the systems on one day; rounds 1-5 give the full
medians. The best broker is the lowest median p50 among brokers that lost at most 1 %. Also
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
p50 = collections.defaultdict(list)
loss = collections.defaultdict(lambda: [0, 0])
cells = []
for r in runs:
    if r["spec"]["label"] not in cells:
        cells.append(r["spec"]["label"])
    if not lo <= r["repetition"] <= hi:
        continue
    k = (r["spec"]["label"], r["system"])
    p50[k].append(r["latency"]["p50_us"])
    loss[k][0] += r["delivery"]["lost"]
    loss[k][1] += r["delivery"]["expected"]
brokers = ["mosquitto", "redis", "nats", "jetstream", "rabbitmq", "kafka"]
print(f"rounds {lo}-{hi}, subject {subject}")
print(f"| cell | {subject} p50 us | runs | lost | best broker | / best broker | / ZeroMQ |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for c in cells:
    v = p50[(c, subject)]
    if not v:
        continue
    f = st.median(v)
    ok = [(st.median(p50[(c, b)]), b) for b in brokers
          if p50[(c, b)] and loss[(c, b)][0] <= 0.01 * loss[(c, b)][1]]
    bv, bn = min(ok)
    z = st.median(p50[(c, "zeromq")])
    lost, expected = loss[(c, subject)]
    print(f"| {c} | {f:.0f} | {len(v)} | {lost}/{expected} | {bn} {bv:.0f} | {f / bv:.2f} | {f / z:.2f} |")
