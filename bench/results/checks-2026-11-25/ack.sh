#!/usr/bin/env bash
# ack.sh N SIZE OUT: where the kernel sends the ACKs of a paced MQTT QoS 0 publisher's
# segments. fogline (BIN) pinned to core 0, mosquitto_sub and a 1 kHz mosquitto_pub on
# core 1; ftrace of every loopback transmit (net_dev_xmit) and the server's recvfrom/sendto.
set -u
n=$1 size=$2 out=$3 bin=${BIN:-/work/main/target/release/fogline}
T=/sys/kernel/tracing
[ -e $T/events ] || mount -t tracefs nodev $T
port=18830
d=$(mktemp -d)
taskset -c 0 $bin serve --listen 127.0.0.1:18829 --mqtt 127.0.0.1:$port --storage memory --data-dir $d/data > $d/log 2>&1 &
spid=$!
for i in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
taskset -c 1 mosquitto_sub -p $port -t 'ack/#' -q 0 > $d/sub.txt &
subpid=$!
sleep 1
echo 0 > $T/tracing_on; echo > $T/trace; echo 8192 > $T/buffer_size_kb
for e in sys_enter_recvfrom sys_exit_recvfrom sys_enter_sendto sys_exit_sendto; do
  echo "common_pid == $spid" > $T/events/syscalls/$e/filter; echo 1 > $T/events/syscalls/$e/enable; done
echo 1 > $T/events/net/net_dev_xmit/enable
echo 1 > $T/tracing_on
python3 $(dirname $0)/../checks-2026-11-24/pace.py $n $size 1000 | taskset -c 1 mosquitto_pub -p $port -t ack/t -q 0 -l
sleep 0.5
echo 0 > $T/tracing_on
cp $T/trace $out
echo 0 > $T/events/enable; for f in $T/events/syscalls/*/filter; do echo 0 > $f 2>/dev/null; done
echo > $T/trace
kill $subpid; kill -TERM $spid; wait $spid
echo "n=$n received $(wc -l < $d/sub.txt) server pid $spid"
rm -rf $d
