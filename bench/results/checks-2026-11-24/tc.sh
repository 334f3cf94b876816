#!/usr/bin/env bash
# tc.sh SYSTEM N: server pinned to core 0 (perf stat task-clock), mosquitto_sub + paced mosquitto_pub -l on core 1; CPU ns per message.
set -u
sys=$1 n=$2 bin=${BIN:-/work/main/target/release/fogline}
port=18830
d=$(mktemp -d)
case $sys in
  fogline) taskset -c 0 $bin serve --listen 127.0.0.1:18829 --mqtt 127.0.0.1:$port --storage mmap --data-dir $d/data > $d/log 2>&1 & ;;
  mosquitto) printf 'listener %s 127.0.0.1\nallow_anonymous true\nuser root\nset_tcp_nodelay true\npersistence true\npersistence_location %s/\nautosave_interval 1\n' $port $d > $d/m.conf
     taskset -c 0 mosquitto -c $d/m.conf > $d/log 2>&1 & ;;
esac
spid=$!
for i in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
taskset -c 1 mosquitto_sub -p $port -t 'cg/#' -q 0 > $d/sub.txt &
subpid=$!
sleep 1
perf stat -e task-clock,context-switches -p $spid -o $d/perf.txt &
ppid=$!
sleep 0.2
python3 $(dirname $0)/pace.py $n 256 1000 | taskset -c 1 mosquitto_pub -p $port -t cg/t -q 0 -l
sleep 0.5
kill -INT $ppid; wait $ppid
kill $subpid; kill -TERM $spid; wait $spid
echo "$sys $n received $(wc -l < $d/sub.txt)"
grep -E "task-clock|context" $d/perf.txt
rm -rf $d
