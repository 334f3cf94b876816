# an2.py TRACE: from sched_waking of the server to its sched_switch in
import re,sys
f=sys.argv[1]
w=None; d=[]
for l in open(f):
    m=re.search(r'\[(\d+)\] \S+ +([\d.]+): (.*)',l)
    if not m: continue
    t=float(m.group(2)); e=m.group(3)
    if e.startswith('sched_waking'): w=t
    elif e.startswith('sched_switch') and w: d.append((t-w)*1e6); w=None
q=lambda x,p: sorted(x)[int(len(x)*p)]
print(f,'wake->run p50 %.1f p90 %.1f p99 %.1f'%(q(d,.5),q(d,.9),q(d,.99)))
