# an3.py TRACE SEND_SYSCALL: epoll_wait returns -> send begins, and the send itself
import re,sys
f=sys.argv[1]; send=sys.argv[2]
ex=None; a=[]; b=[]; se=None; c=[]
for l in open(f):
    m=re.search(r'\[(\d+)\] \S+ +([\d.]+): (.*)',l)
    if not m: continue
    t=float(m.group(2)); e=m.group(3)
    if e.startswith('sys_epoll_wait ->'): ex=t
    elif e.startswith('sys_'+send+'(') and '0x108' in e and ex: a.append((t-ex)*1e6); se=t
    elif e.startswith('sys_'+send+' -> 0x108') and se: b.append((t-se)*1e6); se=None; ex=None
q=lambda x,p: sorted(x)[int(len(x)*p)]
for n,x in (('epoll exit->send enter',a),('send',b)):
    print(f,n,'n',len(x),'p10 %.1f p50 %.1f p90 %.1f'%(q(x,.1),q(x,.5),q(x,.9)))
