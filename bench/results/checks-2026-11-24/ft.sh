#!/usr/bin/env bash
# ft.sh SYSTEM N OUT: server pinned to core 0, mosquitto_sub + paced mosquitto_pub on core 1; ftrace of the server's wake-ups and syscalls.
set -u
sys=$1 n=$2 out=$3 bin=${BIN:-/work/main/target/release/fogline}
T=/sys/kernel/tracing
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
echo 0 > $T/tracing_on; echo > $T/trace; echo 8192 > $T/buffer_size_kb
for e in sys_enter_epoll_wait sys_exit_epoll_wait sys_enter_recvfrom sys_exit_recvfrom sys_enter_sendto sys_exit_sendto sys_enter_read sys_exit_read sys_enter_write sys_exit_write; do
  echo "common_pid == $spid" > $T/events/syscalls/$e/filter; echo 1 > $T/events/syscalls/$e/enable; done
echo "pid == $spid" > $T/events/sched/sched_waking/filter; echo 1 > $T/events/sched/sched_waking/enable
echo "next_pid == $spid" > $T/events/sched/sched_switch/filter; echo 1 > $T/events/sched/sched_switch/enable
echo 1 > $T/tracing_on
python3 $(dirname $0)/pace.py $n 256 1000 | taskset -c 1 mosquitto_pub -p $port -t cg/t -q 0 -l
echo 0 > $T/tracing_on
cp $T/trace $out
echo 0 > $T/events/enable; for f in $T/events/syscalls/*/filter $T/events/sched/*/filter; do echo 0 > $f 2>/dev/null; done
echo > $T/trace
kill $subpid; kill -TERM $spid; wait $spid
echo "$sys $n received $(wc -l < $d/sub.txt) pid $spid"
rm -rf $d
