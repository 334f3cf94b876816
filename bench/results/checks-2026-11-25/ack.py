# ack.py TRACE SERVER_PID: loopback transmits of the server and the mosquitto clients, by
# kind (pure ACK: 66 bytes on lo) and by where they happen: inside the server's read (a
# recvfrom, or PeekRead's MSG_PEEK), its discard (PeekRead's MSG_TRUNC recvfrom) or its
# sendto, or in a client's context (which includes the softirq its own sends run).
import re, sys, collections
pid = sys.argv[2]
state = None
counts = collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r"\s*(\S+)-(\d+)\s+\[\d+\]\s+\S+\s+[\d.]+: (.*)", line)
    if not m:
        continue
    comm, p, rest = m.groups()
    if p == pid:
        if rest.startswith("sys_recvfrom("):
            # flags 0x60: PeekRead's discard (MSG_TRUNC | MSG_DONTWAIT), after the forward
            state = "server discard" if "flags: 0x60" in rest else "server read"; continue
        if rest.startswith("sys_sendto("):
            state = "server sendto"; continue
        if rest.startswith("sys_"):
            state = None; continue
    if not rest.startswith("net_dev_xmit"):
        continue
    if p == pid:
        where = state or "server other"
    elif comm.startswith("mosquitto_"):
        where = comm
    else:
        continue
    ln = int(re.search(r"len=(\d+)", rest).group(1))
    counts[("ack" if ln == 66 else "data", where)] += 1
for (kind, where), v in sorted(counts.items()):
    print(f"{kind:5} {where:16} {v}")
