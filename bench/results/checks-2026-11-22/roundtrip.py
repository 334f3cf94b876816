# usage: roundtrip.py TRACE[.gz]  (perf trace of the load generator at a low rate)
# Time from each sendto (the publisher's write) to the next recvfrom that returns data (the
# subscriber's read), both on the load generator's thread: the server's share plus the wake-ups.
import gzip,re,sys,statistics as st
pat=re.compile(r'^\s*([\d.]+) \(\s*([\d.]+) ms\): \S+ (\w+)\(.*\)\s+= (\d+)')
out=[];sent=None
f=gzip.open(sys.argv[1],'rt') if sys.argv[1].endswith('.gz') else open(sys.argv[1])
for line in f:
    m=pat.match(line)
    if not m: continue
    t,name,ret=float(m.group(1)),m.group(3),int(m.group(4))
    if name=='sendto': sent=t
    elif name=='recvfrom' and ret>0 and sent is not None:
        out.append((t-sent)*1000); sent=None
print(sys.argv[1],'n',len(out),'median us',round(st.median(out),1),'p90',round(sorted(out)[int(len(out)*.9)],1))
