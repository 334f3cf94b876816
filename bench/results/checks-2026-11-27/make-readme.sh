#!/usr/bin/env bash
# Writes this folder's README.md from ../seed003/results.json (run it again when that changes).
set -euo pipefail
cd "$(dirname "$0")"
r=../seed003/results.json
n=$(python3 -c 'import json; print(len(json.load(open("../seed003/results.json"))["results"]))')
{
cat <<HDR
# Checks, 2026-11-27: seed003 across machines

seed003's full run (\`../seed003\`) is carried over sittings by \`bench/long-run.sh seed003\`, always on
a build of \`745d8af\`, and each sitting's machine is a row of \`../seed003/sittings.tsv\`. The sitting
that began 2026-11-27 02:34 UTC (after run 866) ran on a new machine: same VM shape (AMD EPYC, 2
vCPUs), kernel \`6.18.44-fc-v669\` instead of \`v657\`, the binary rebuilt from \`745d8af\`. Its
latencies are higher for every system. The noise check saw nothing (other processes' CPU 0 %, steal
under 0.02 %): whatever slowed the wake-ups is below the guest. Figures below at $n runs.

## That sitting against the earlier runs of the same cells

\`python3 sitting-shift.py ../seed003/results.json 866 1006\`: each run of the sitting over the median of
the same system's earlier runs in that cell.

HDR
python3 sitting-shift.py $r 866 1006
cat <<MID0

For scale, the two sittings before it, with the same kernel as the first (\`python3 sitting-shift.py ../seed003/results.json 711 866\`
and \`... 588 711\`): medians 0.94-1.02 for every system's p50 and 0.91-1.08 for msg/s.

## The last sitting

The run's last sitting (2026-11-27 05:17 UTC, after run 1006, to the end) ran on the same machine
as the one before (kernel \`v669\`) and measured only the end of round 10: JetStream's last 9 runs,
RabbitMQ's 17 and Kafka's 18, no fogline run. \`python3 sitting-shift.py ../seed003/results.json 1006\`
(against every earlier run, both kernels):

MID0
python3 sitting-shift.py $r 1006
cat <<MID

## Do the later rounds move fogline's ratios?

Rounds run every system once, in a fixed order (fogline, fogline-mqtt, Mosquitto, JetStream,
RabbitMQ, Kafka), so a round split across two machines mixes them: round 9's fogline runs and
all but two of fogline-mqtt's were measured before the change, its peers' runs after. That leans round 9
in fogline's favour in the latency cells. Rounds 1-8 were all measured with the first kernel (\`v657\`).
Round 10 was measured wholly on the second kernel, its Kafka runs in the last sitting (above). Kafka
is the best broker in the (c) producer and both cells; its runs there, msg/s:

MID
python3 - "$r" <<'PY'
import json, statistics, sys
runs = json.load(open(sys.argv[1]))["results"]
print("| cell | round 10 | rounds 1-9: range | median, rounds 1-9 (fogline / it) "
      "| median, rounds 1-10 (fogline / it) |")
print("| --- | --- | --- | --- | --- |")
for cell in ("(c) 100 MB of 1 kB: producer alone", "(c) 100 MB of 1 kB: both"):
    def runs_of(system):
        return {r["repetition"]: r["throughput_msgs"] for r in runs
                if r["system"] == system and r["spec"]["label"] == cell}
    v, fogline = runs_of("kafka"), statistics.median(runs_of("fogline").values())
    early = [v[k] for k in v if k <= 9]
    m9, m10 = statistics.median(early), statistics.median(v.values())
    print(f"| {cell} | {v[10]:.0f} | {min(early):.0f}-{max(early):.0f} "
          f"| {m9:.0f} ({fogline / m9:.2f}) | {m10:.0f} ({fogline / m10:.2f}) |")
PY
cat <<MID

So round 10's Kafka runs, the slowest of its producer-alone runs, lower Kafka's medians and raise
fogline's two ratios against it by up to 0.09; rounds 1-8 alone (below, first kernel only) give
the same producer-alone ratio as all ten rounds.

\`python3 ../checks-2026-11-26/rounds.py ../seed003/results.json 1-8 fogline\` (then \`fogline-mqtt\`):

MID
python3 ../checks-2026-11-26/rounds.py $r 1-8 fogline; echo; python3 ../checks-2026-11-26/rounds.py $r 1-8 fogline-mqtt
echo
echo "The same over rounds 1-10 (every run present: the medians of ../seed003/summary.md, without intervals):"
echo
python3 ../checks-2026-11-26/rounds.py $r 1-10 fogline; echo; python3 ../checks-2026-11-26/rounds.py $r 1-10 fogline-mqtt
} > README.md
echo wrote README.md at $n runs
