#!/usr/bin/env python3
"""cmp.py NAME [METRIC]: per system, cell and build (A, B) of the A/B set NAME (files
NAME-A1.json .. NAME-B4.json beside this script), the median of METRIC over every
repetition, then the values. METRIC: a latency key (min_us, p50_us, p90_us, ...),
throughput_msgs, or `ratio`: fogline's p50 over Mosquitto's p50 of the same run and
repetition. Default p50_us."""
import glob, json, os, statistics, sys

name = sys.argv[1]
metric = sys.argv[2] if len(sys.argv) > 2 else 'p50_us'
here = os.path.dirname(os.path.abspath(__file__))
out = {}
for f in sorted(glob.glob(os.path.join(here, f'{name}-[AB][0-9].json'))):
    build = os.path.basename(f)[len(name) + 1]
    results = json.load(open(f))['results']
    if metric == 'ratio':
        p50 = {(r['system'], r['spec']['label'], r['repetition']): r['latency']['p50_us']
               for r in results}
        for (system, cell, rep), v in p50.items():
            peer = p50.get(('mosquitto', cell, rep))
            if system == 'fogline' and peer:
                out.setdefault(('fogline/mosquitto', cell, build), []).append(v / peer)
        continue
    for r in results:
        v = r[metric] if metric in r else r['latency'][metric]
        out.setdefault((r['system'], r['spec']['label'], build), []).append(v)
for (system, cell, build), vs in sorted(out.items()):
    print(f'{system:10s} {cell:26s} {build} median {statistics.median(vs):10.3f}  ',
          ' '.join(f'{v:.2f}' for v in vs))
