# an.py TRACE SEND_SYSCALL: from the server being switched in (and from its first read) to the end of its forwarding send
import re,sys,statistics as st
f=sys.argv[1]; send=sys.argv[2]  # 'sendto' or 'write'
ev=[]
for l in open(f):
    m=re.search(r'\[(\d+)\] \S+ +([\d.]+): (.*)',l)
    if m: ev.append((float(m.group(2)),m.group(3)))
sw=0; d=[]; last=None; wakes=0; recv_to_send=[]; rs=None
for t,e in ev:
    if e.startswith('sched_switch'): sw+=1; last=t
    elif e.startswith('sched_waking'): wakes+=1
    elif (e.startswith('sys_recvfrom(') or e.startswith('sys_read(')) and rs is None: rs=t
    elif e.startswith('sys_'+send+' -> 0x108') and last is not None:
        d.append((t-last)*1e6); recv_to_send.append((t-rs)*1e6); last=None; rs=None
    elif e.startswith('sys_epoll_wait('): rs=None
q=lambda x,p: sorted(x)[int(len(x)*p)]
print(f, 'switches',sw,'wakes',wakes,'msgs',len(d))
print(' switch->send exit  p50 %.1f p90 %.1f p99 %.1f'%(q(d,.5),q(d,.9),q(d,.99)))
print(' first read->send exit p50 %.1f p90 %.1f p99 %.1f'%(q(recv_to_send,.5),q(recv_to_send,.9),q(recv_to_send,.99)))
