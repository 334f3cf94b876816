# diff.py A B N [ROWS [inclusive]]: per-function self (or inclusive) instructions per message, callgrind out A against B, over N messages
import re, subprocess, sys
def load(f):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", "--auto=no", "--inclusive=" + ("yes" if len(sys.argv)>5 else "no"), f], capture_output=True, text=True).stdout
    d = {}
    tot = 0
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)", line)
        if not m: continue
        v = int(m.group(1).replace(",", "")); name = m.group(2)
        if "PROGRAM TOTALS" in name: tot = v; continue
        name = re.sub(r" \[/.*\]$", "", name)
        name = name.split(":", 1)[-1] if ":" in name else name
        d[name] = d.get(name, 0) + v
    return tot, d
a_tot, a = load(sys.argv[1]); b_tot, b = load(sys.argv[2]); n = float(sys.argv[3])
print(f"total per message: {(b_tot-a_tot)/n:.0f}")
rows = sorted(((b.get(k,0)-a.get(k,0))/n, k) for k in set(a)|set(b))
for v,k in reversed(rows[-int(sys.argv[4]) if len(sys.argv)>4 else -45:]):
    print(f"{v:8.0f}  {k[:150]}")
