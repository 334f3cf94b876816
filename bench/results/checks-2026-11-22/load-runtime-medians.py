import json,glob,statistics as st,collections
d=collections.defaultdict(list)
for f in sorted(glob.glob('load-runtime-*.json')):
    v=f.split("-")[-1][0]
    for x in json.load(open(f))['results']:
        d[(x['system'],x['spec']['label'],v)].append(x['latency']['p50_us'])
for k in sorted(d):
    print(f"{k[0]:13} {k[1]:22} {k[2]} n={len(d[k])} median={st.median(d[k]):7.1f}  {[round(a) for a in d[k]]}")
