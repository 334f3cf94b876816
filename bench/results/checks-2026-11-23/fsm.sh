#!/bin/bash
# fsm.sh BIN: fsync server on core 0; mosquitto_pub -q 1 -M 64 of 20000 lines (100 B) on core 1
B=/work/scratch/bin/$1/fogline
D=/tmp/s9/fsm-$1; rm -rf $D; mkdir -p $D
taskset -c 0 $B serve --storage fsync --data-dir $D --listen 127.0.0.1:7799 --mqtt 127.0.0.1:18830 > $D.log 2>&1 &
S=$!
sleep 1
python3 -c "print('\n'.join('x'*100 for _ in range(20000)))" > /tmp/s9/lines.txt
/usr/bin/time -f "%e s" taskset -c 1 mosquitto_pub -p 18830 -t t -q 1 -M 64 -l < /tmp/s9/lines.txt 2>&1 | tail -1
kill $S; wait $S 2>/dev/null
