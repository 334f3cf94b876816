"""seed003's ratios fogline / best peer from a subset of its rounds (repetitions), to see whether
the runs of one sitting move them: medians per system and cell as in summary.md (p50 for (a) and
(b), delivered msg/s for (c); peers that lost more than 1 % are not best), without intervals.

    python3 by-rounds.py ../seed003/results.json 1-8     # rounds 1 to 8
    python3 by-rounds.py ../seed003/results.json 1-10    # every round"""
import collections
import json
import statistics
import sys

path, span = sys.argv[1], sys.argv[2]
first, last = (int(x) for x in span.split("-"))
runs = [r for r in json.load(open(path))["results"] if first <= r["repetition"] <= last]
ours = ("fogline", "fogline-mqtt")
values = collections.defaultdict(list)
lossy = set()
for r in runs:
    key = (r["spec"]["label"], r["system"])
    latency = r["spec"]["label"][:3] in ("(a)", "(b)")
    values[key].append(r["latency"]["p50_us"] if latency else r["throughput_msgs"])
    d = r["delivery"]
    if d["expected"] and d["lost"] / d["expected"] > 0.01:
        lossy.add(key)


def show(v):
    return f"{v / 1e3:.0f}k" if v >= 1e4 else f"{v:.3g}"


cells = list(dict.fromkeys(label for label, _ in values))
print(f"rounds {first}-{last}")
print("| cell | best peer | fogline | / best | fogline-mqtt | / best | runs per system |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for cell in cells:
    latency = cell[:3] in ("(a)", "(b)")
    med = {s: statistics.median(v) for (c, s), v in values.items() if c == cell}
    peers = {s: m for s, m in med.items() if s not in ours and (cell, s) not in lossy}
    best = (min if latency else max)(peers, key=peers.get)
    row = [cell, f"{best} {show(peers[best])}"]
    for s in ours:
        row += [show(med[s]), f"{med[s] / peers[best]:.2f}"] if s in med else ["-", "-"]
    counts = sorted({len(v) for (c, s), v in values.items() if c == cell})
    row.append("-".join(str(n) for n in counts))
    print("| " + " | ".join(row) + " |")
