import gzip,re,sys,statistics as st
# usage: residence.py TRACE[.gz]  (perf trace output of one server process)
# residence: epoll_wait end -> start of the next write/sendto
pat=re.compile(r'^\s*([\d.]+) \(\s*([\d.]+) ms\): (?:\S+ )?(\w+)\(')
out=[];end=None
for line in (gzip.open(sys.argv[1],'rt') if sys.argv[1].endswith('.gz') else open(sys.argv[1])):
    m=pat.match(line)
    if not m: continue
    t,d,name=float(m.group(1)),float(m.group(2)),m.group(3)
    if name=='epoll_wait' and d>1: end=t+d
    elif name in('write','sendto','writev','sendmsg') and end is not None:
        out.append((t-end)*1000); end=None
print(sys.argv[1], 'n',len(out),'median us',round(st.median(out),1),'p90',round(sorted(out)[int(len(out)*.9)],1))
