#!/usr/bin/env bash
# cg.sh SYSTEM N OUT: server under callgrind, mosquitto_sub QoS 0 on cg/#, N paced 256 B QoS 0 messages at 1 kHz from mosquitto_pub -l.
set -u
sys=$1 n=$2 out=$3 bin=${BIN:-/work/main/target/release/fogline}
port=18830
d=$(mktemp -d)
case $sys in
  fogline) valgrind --tool=callgrind --callgrind-out-file=$out $bin serve --listen 127.0.0.1:18829 --mqtt 127.0.0.1:$port --storage mmap --data-dir $d/data --threads 1 > $d/log 2>&1 & ;;
  mosquitto) printf 'listener %s 127.0.0.1\nallow_anonymous true\nuser root\nset_tcp_nodelay true\npersistence true\npersistence_location %s/\nautosave_interval 1\n' $port $d > $d/m.conf
     valgrind --tool=callgrind --callgrind-out-file=$out mosquitto -c $d/m.conf > $d/log 2>&1 & ;;
esac
vpid=$!
for i in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
mosquitto_sub -p $port -t 'cg/#' -q 0 > $d/sub.txt &
spid=$!
sleep 1
python3 $(dirname $0)/pace.py $n 256 1000 | mosquitto_pub -p $port -t cg/t -q 0 -l
sleep 1
kill $spid; sleep 0.5
kill -TERM $vpid; wait $vpid
echo "$sys $n received $(wc -l < $d/sub.txt)"
grep -E '^(summary|totals):' $out
rm -rf $d
