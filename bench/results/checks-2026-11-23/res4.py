import sys,re
# user time between recvfrom exit and the next sendto enter (fogline) / last read exit -> write enter (mosquitto)
last=None; res=[]
for line in sys.stdin:
    m=re.match(r'\s*([\d.]+):\s+raw_syscalls:sys_(enter|exit):\s+NR (\d+)',line)
    if not m: continue
    t=float(m.group(1)); kind=m.group(2); nr=int(m.group(3))
    if kind=='exit': last=(t,nr)
    elif kind=='enter' and nr in (1,44) and last and last[1] in (0,45,233):
        res.append((t-last[0])*1e6)
res.sort(); q=lambda p: res[int(p*(len(res)-1))]
print(f"user time before the send: n={len(res)} p10={q(.1):.2f} p50={q(.5):.2f} p90={q(.9):.2f} us")
