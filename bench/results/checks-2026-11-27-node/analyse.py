#!/usr/bin/env python3
"""Summarises ab.sh and scrape.sh outputs: per cell, each leg's median and the per-round
ratios (paired by round), median and range.

    python3 analyse.py OUT_AB OUT_SCRAPE
"""
import json, pathlib, re, statistics, sys

def summary(path):
    """The subscriber's JSON summary line of one run.sh output."""
    for line in pathlib.Path(path).read_text().splitlines():
        line = line.strip()
        if line.startswith("{") and '"received"' in line:
            return json.loads(line)
    raise SystemExit(f"{path}: no summary")

def table(runs, metric, label):
    rounds = sorted({r for (_, r) in runs})
    legs = sorted({l for (l, _) in runs})
    for leg in legs:
        vals = [metric(runs[(leg, r)]) for r in rounds if (leg, r) in runs]
        print(f"  {label} {leg}: median {statistics.median(vals):,.1f}  runs {', '.join(f'{v:,.1f}' for v in vals)}")
    return rounds, legs

def paired(runs, metric, a, b, rounds):
    ratios = [metric(runs[(b, r)]) / metric(runs[(a, r)]) for r in rounds if (a, r) in runs and (b, r) in runs]
    print(f"  {b} / {a} by round: {', '.join(f'{x:.3f}' for x in ratios)}; "
          f"median {statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}")

def load(dirpath, pattern):
    runs = {}
    for p in pathlib.Path(dirpath).glob("*.txt"):
        m = re.fullmatch(pattern, p.stem)
        if m:
            runs[(m.group("leg"), int(m.group("round")))] = summary(p)
    return runs

ab, scrape = sys.argv[1], sys.argv[2]
rate = lambda s: s["records_per_s"]
p50 = lambda s: s["latency_us"]["p50"]
for cell, metric, label in [("max22", rate, "records/s"), ("khz256", p50, "p50 us")]:
    runs = load(ab, rf"{cell}-(?P<leg>old|new)-(?P<round>\d+)")
    print(f"{cell} ({label}), {len(runs)} runs")
    rounds, _ = table(runs, metric, label)
    paired(runs, metric, "old", "new", rounds)
    if cell == "max22":
        lost = sum(s["gaps"] for s in runs.values())
        print(f"  records lost in all runs: {lost}")
runs = load(scrape, r"(?P<leg>quiet|scraped)-(?P<round>\d+)")
print(f"scrape cost, max22 (records/s), {len(runs)} runs")
rounds, _ = table(runs, rate, "records/s")
paired(runs, rate, "quiet", "scraped", rounds)
