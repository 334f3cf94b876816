#!/bin/bash
# fs.sh BIN: fsync server on core 0, `fogline pub --ack` of 20000 x 1 KiB on core 1; prints wall time
B=/work/scratch/bin/$1/fogline
D=/tmp/s9/fsd-$1; rm -rf $D; mkdir -p $D
taskset -c 0 $B serve --storage fsync --data-dir $D --listen 127.0.0.1:7799 --mqtt off > $D.log 2>&1 &
S=$!
sleep 1
/usr/bin/time -f "%e s" taskset -c 1 $B pub -s 127.0.0.1:7799 t -n ${N:-200000} --size 1024 --ack --json 2>&1 | tail -2
kill $S; wait $S 2>/dev/null
