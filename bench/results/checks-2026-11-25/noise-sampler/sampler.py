import os,time
HZ=os.sysconf("SC_CLK_TCK")
def cpu():
    f=open("/proc/stat").readline().split()[1:]
    f=list(map(int,f)); return f[0]+f[1]+f[2]
def snap():
    d={}
    for p in os.listdir("/proc"):
        if not p.isdigit(): continue
        try:
            s=open(f"/proc/{p}/stat").read()
            r=s.rindex(")"); name=s[s.index("(")+1:r]; f=s[r+2:].split()
            d[int(p)]=(f[19],int(f[11])+int(f[12]),int(f[13])+int(f[14]), int(f[6])&0x200000!=0,name)
        except Exception: pass
    return d
a=snap(); ca=cpu(); t=time.time()
while True:
    time.sleep(1)
    b=snap(); cb=cpu(); now=time.time(); dt=now-t
    rows=[]; vis=0
    for p,v in b.items():
        o=a.get(p)
        du=v[1]-(o[1] if o and o[0]==v[0] else 0)
        dc=v[2]-(o[2] if o and o[0]==v[0] else 0)
        vis+=du
        if du+dc>0: rows.append((100*(du)/HZ/dt,100*dc/HZ/dt,p,v[4],v[3]))
    busy=100*(cb-ca)/HZ/dt
    rows.sort(reverse=True)
    big=[r for r in rows if r[3] not in ("fogline","nats-server","beam.smp","java","mosquitto","redis-server")]
    other=sum(r[0] for r in big)
    if busy - sum(r[0] for r in rows if r not in big) > 8:
        print(time.strftime("%H:%M:%S",time.gmtime(now)), f"busy={busy:.0f}% visible={100*vis/HZ/dt:.0f}%", " ".join(f"{n}{'[k]' if k else ''}:{pid}:{c:.0f}%{'+c'+format(cc,'.0f') if cc else ''}" for c,cc,pid,n,k in rows[:8]), flush=True)
    a,ca,t=b,cb,now
