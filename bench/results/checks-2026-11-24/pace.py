# pace.py N SIZE HZ: N lines of SIZE bytes (newline included) on stdout, paced at HZ
import sys, time
n = int(sys.argv[1]); size = int(sys.argv[2]); hz = float(sys.argv[3])
line = ("x" * (size - 1) + "\n").encode()
out = sys.stdout.buffer
t = time.monotonic()
for i in range(n):
    t += 1.0 / hz
    d = t - time.monotonic()
    if d > 0:
        time.sleep(d)
    out.write(line); out.flush()
