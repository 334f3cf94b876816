import sys,re
woke=None; res=[]
for line in sys.stdin:
    m=re.match(r'\s*([\d.]+):\s+syscalls:sys_(enter|exit)_(\w+):',line)
    if not m: continue
    t=float(m.group(1)); kind=m.group(2); name=m.group(3)
    if kind=='exit' and name=='epoll_wait': woke=t
    elif kind=='enter' and name in('sendto','write') and woke is not None:
        res.append((t-woke)*1e6); woke=None
    elif kind=='enter' and name=='epoll_wait': woke=None
res.sort()
q=lambda p: res[int(p*(len(res)-1))]
print(f"residence n={len(res)} p10={q(.1):.2f} p50={q(.5):.2f} p90={q(.9):.2f} us")
