# callers.py A B N FUNC: the callers of FUNC with their instructions per message, callgrind out A against B, over N messages
import re, subprocess, sys
def load(f, target):
    out = subprocess.run(["callgrind_annotate", "--tree=caller", "--threshold=100", "--auto=no", f], capture_output=True, text=True).stdout
    lines = out.splitlines(); d = {}
    for i, l in enumerate(lines):
        if re.search(r"\*\s+.*" + re.escape(target), l):
            j = i - 1
            while j >= 0 and "<" in lines[j]:
                m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+<\s+(.*)", lines[j])
                if m:
                    k = re.sub(r" \[/.*\]$", "", m.group(2)); k = k.split(":",1)[-1]
                    d[k] = d.get(k,0) + int(m.group(1).replace(",",""))
                j -= 1
    return d
t = sys.argv[4]
a = load(sys.argv[1], t); b = load(sys.argv[2], t); n = float(sys.argv[3])
rows = sorted(((b.get(k,0)-a.get(k,0))/n, k) for k in set(a)|set(b))
for v,k in reversed(rows[-15:]):
    print(f"{v:8.0f}  {k[:160]}")
