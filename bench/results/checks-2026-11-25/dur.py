# dur.py TRACE SERVER_PID: per message, the time (us) from the start of the server's read
# that returns the publisher's bytes (recvfrom, or its MSG_PEEK) to the start and to the end
# of the sendto that forwards them, and how long that read takes.
import re, sys
pid = sys.argv[2]
read_start = None   # start of the current read syscall (not a MSG_TRUNC discard)
got = None          # start of the read that returned data, waiting for the forward
send_start = None
d = {"read": [], "read start -> send start": [], "read start -> send end": []}
for line in open(sys.argv[1]):
    m = re.match(r"\s*\S+-(\d+)\s+\[\d+\]\s+\S+\s+([\d.]+): sys_(\w+)(.*)", line)
    if not m or m.group(1) != pid:
        continue
    t = float(m.group(2)) * 1e6
    name, rest = m.group(3), m.group(4)
    if rest.startswith("("):
        if name == "recvfrom":
            read_start = None if "flags: 0x60" in rest else t
        elif name == "sendto" and got is not None:
            send_start = t
        continue
    ret = int(rest.split("->")[1].strip(), 16)
    if name == "recvfrom" and read_start is not None:
        if 0 < ret < 1 << 63:
            d["read"].append(t - read_start)
            got = read_start
        read_start = None
    elif name == "sendto" and got is not None and send_start is not None:
        d["read start -> send start"].append(send_start - got)
        d["read start -> send end"].append(t - got)
        got = send_start = None
for k, v in d.items():
    v.sort()
    if v:
        print(f"{k:26} n={len(v):5} p50={v[len(v)//2]:5.1f} p90={v[len(v)*9//10]:5.1f} p99={v[len(v)*99//100]:5.1f}")
