#!/bin/bash
# mqtt-server-cpu.sh BIN N QOS: the server's CPU time per MQTT message (perf stat task-clock),
# N lines of 250 B through mosquitto_pub -l -> fogline -> mosquitto_sub; server on core 0,
# clients on core 1. QoS 0 only in practice: mosquitto_pub -l at QoS 1 exits with messages
# unsent (it does the same against Mosquitto).
BIN=$1; N=$2; Q=$3
D=$(mktemp -d /tmp/fogline-mqtt-cpu.XXXX)
PORT=$((20000 + RANDOM % 20000))
python3 -c "import sys; sys.stdout.write(('x'*250+'\n')*$N)" > $D/lines
taskset -c 0 perf stat -x, -e task-clock -o $D/stat $BIN serve --storage mmap --data-dir $D/data --threads 1 --listen 127.0.0.1:0 --mqtt 127.0.0.1:$PORT >/dev/null 2>&1 &
SP=$!
sleep 0.7
taskset -c 1 mosquitto_sub -p $PORT -t t -q $Q -C $N > $D/got &
SUB=$!
sleep 0.3
S=$(date +%s.%N)
taskset -c 1 mosquitto_pub -p $PORT -t t -q $Q -l < $D/lines
wait $SUB
E=$(date +%s.%N)
SRV=$(pgrep -P $SP)
kill -INT $SRV 2>/dev/null; wait $SP
TC=$(grep task-clock $D/stat | cut -d, -f1)
echo "$(basename $BIN) qos=$Q n=$N got=$(wc -l < $D/got) wall=$(echo "$E - $S" | bc | cut -c1-6)s server_ms=$TC us_per_msg=$(echo "scale=3; $TC*1000/$N" | bc)"
rm -rf $D
