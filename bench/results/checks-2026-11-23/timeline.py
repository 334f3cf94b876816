#!/usr/bin/env python3
"""timeline.py TRACE LOADPID SERVERPID: per-message timeline from `perf trace -p LOAD,SERVER`.
For each load-side publish sendto (len >= MIN), finds the next server recvfrom of data, the
next server sendto, the load's next epoll_wait return, and the load's next data recvfrom.
Prints medians of the intervals (us)."""
import re, sys, statistics
path, lpid, spid = sys.argv[1], sys.argv[2], sys.argv[3]
MIN = int(sys.argv[4]) if len(sys.argv) > 4 else 200
line_re = re.compile(r'^\s*([\d.]+) \(\s*([\d.]+) ms\): [^/]+/(\d+)\s+(?:\.\.\. \[continued\]: )?(\w+)\((.*)\)\s+= (-?\w+)')
ev = []
for line in open(path, errors='replace'):
    m = line_re.match(line)
    if not m:
        continue
    t, dur, pid, name, args, ret = m.groups()
    t = float(t) * 1000.0  # us
    dur = float(dur) * 1000.0
    try:
        r = int(ret)
    except ValueError:
        r = -1
    ev.append((t, dur, pid, name, r, args))
ev.sort()
L = [e for e in ev if e[2] == lpid]
S = [e for e in ev if e[2] == spid]
def nxt(seq, t, pred):
    for e in seq:
        if e[0] >= t and pred(e):
            return e
    return None
import bisect
Lt = [e[0] for e in L]; St = [e[0] for e in S]
def after(seq, ts, t, pred, limit=200):
    i = bisect.bisect_left(ts, t)
    for e in seq[i:i+limit]:
        if pred(e):
            return e
    return None
rows = []
for i, e in enumerate(L):
    if e[3] not in ('sendto', 'write', 'writev') or e[4] < MIN:
        continue
    t0 = e[0]; t0x = e[0] + e[1]
    sr = after(S, St, t0, lambda x: x[3] == 'recvfrom' and x[4] >= MIN)
    if not sr: continue
    sw = after(S, St, sr[0], lambda x: x[3] in ('sendto', 'write', 'writev') and x[4] >= MIN)
    if not sw: continue
    lr = after(L, Lt, sw[0], lambda x: x[3] == 'recvfrom' and x[4] >= MIN)
    if not lr: continue
    # the load's last epoll_wait that returned before lr
    j = bisect.bisect_left(Lt, lr[0]) - 1
    ew = None
    while j > 0 and L[j][0] > t0:
        if L[j][3] == 'epoll_wait':
            ew = L[j]; break
        j -= 1
    # what the load did between its publish and the deliver's recvfrom
    between = [x[3] for x in L[i+1:bisect.bisect_left(Lt, lr[0])]]
    rows.append(dict(
        send_dur=e[1],
        to_srv_recv=sr[0] - t0x,
        srv_proc=sw[0] - (sr[0] + sr[1]),
        srv_send_dur=sw[1],
        to_load_recv=lr[0] - (sw[0] + sw[1]),
        ew_ret_to_recv=(lr[0] - (ew[0] + ew[1])) if ew else float('nan'),
        total=lr[0] + lr[1] - t0,
        between=' '.join(between)))
print('messages', len(rows))
for k in ['send_dur', 'to_srv_recv', 'srv_proc', 'srv_send_dur', 'to_load_recv', 'ew_ret_to_recv', 'total']:
    v = [r[k] for r in rows if r[k] == r[k]]
    print(f'{k:16s} median {statistics.median(v):7.1f} us  p90 {sorted(v)[int(len(v)*.9)]:7.1f}')
from collections import Counter
c = Counter(r['between'] for r in rows)
for k, n in c.most_common(5):
    print(n, repr(k))
