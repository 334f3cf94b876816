# ab.py NAME [SYSTEM]: per cell and build, the median of SYSTEM's p50 / Mosquitto's p50 over NAME-A*.json, NAME-B*.json
import json,sys,glob,statistics as st
name=sys.argv[1]; SYSN=sys.argv[2] if len(sys.argv)>2 else "fogline-mqtt"
res={'A':[], 'B':[]}
raw={'A':[], 'B':[]}
for f in sorted(glob.glob(f'{name}-[AB]*.json')):
    v=f.split('-')[1][0]
    d=json.load(open(f))
    by={}
    for x in d['results']:
        by[(x['spec']['label'],x['repetition'],x['system'])]=x['latency']['p50_us']
    for (c,r,s),p in by.items():
        if s==SYSN and (c,r,'mosquitto') in by:
            res[v].append((c,p/by[(c,r,'mosquitto')]))
            raw[v].append((c,p,by[(c,r,'mosquitto')]))
for v in 'AB':
    for c in sorted(set(c for c,_ in res[v])):
        rs=[x for cc,x in res[v] if cc==c]
        fm=[p for cc,p,m in raw[v] if cc==c]; mq=[m for cc,p,m in raw[v] if cc==c]
        print(v,c,'n',len(rs),'median ratio %.3f'%st.median(rs),'fm p50 med %.1f'%st.median(fm),'mq p50 med %.1f'%st.median(mq), ' '.join('%.2f'%x for x in rs))
