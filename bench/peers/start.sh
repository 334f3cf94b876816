#!/usr/bin/env bash
# Starts one peer on 127.0.0.1 in the background and waits until it serves.
#   bench/peers/start.sh PEER DIR PORT [volatile|persistent]
# PEER: mosquitto redis nats rabbitmq kafka (nats also serves JetStream). DIR holds its
# config, data and log, and DIR/pid the process id to sample and stop (bench/peers/stop.sh
# DIR). Ports used: PORT; rabbitmq also PORT+1 (distribution) and PORT+2 (its own epmd);
# kafka also PORT+1 (controller). Prints the pid. Idempotent: a live DIR/pid is reused.
# Exit 3: the peer is not installed (the message says how to install it).
# Settings follow the source studies: volatile = persistence off (000 matrix); persistent =
# on (004 comparison): mosquitto persistence with 1 s autosave, redis AOF everysec, kafka
# logs on disk instead of /dev/shm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
peer=${1:?peer} dir=${2:?dir} port=${3:?port} mode=${4:-volatile}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then cat "$dir/pid"; exit 0; fi
echo "$peer" > "$dir/peer"
missing() {
  echo "fogline-bench: $peer is not installed ($1 not found); install it with: bench/peers/install.sh $peer" >&2
  exit 3
}
wait_port() {
  for _ in $(seq 1 "${2:-300}"); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "start.sh: $peer did not open port $1; log: $dir/log" >&2
  tail -20 "$dir/log" >&2 || true
  return 1
}
case $peer in
  mosquitto)
    command -v mosquitto >/dev/null || missing mosquitto
    persist=false; [ "$mode" = persistent ] && persist=true
    # `user root` keeps root from dropping to user mosquitto, which cannot write into DIR.
    # set_tcp_nodelay: without it Nagle holds small packets (QoS 1 acks: ~40 ms each).
    cat > "$dir/mosquitto.conf" <<EOF
listener $port 127.0.0.1
allow_anonymous true
persistence $persist
persistence_location $dir/
autosave_interval 1
set_tcp_nodelay true
log_dest stdout
user root
EOF
    mosquitto -c "$dir/mosquitto.conf" > "$dir/log" 2>&1 &
    echo $! > "$dir/pid"; wait_port "$port" ;;
  redis)
    command -v redis-server >/dev/null || missing redis-server
    if [ "$mode" = persistent ]; then aof=(--appendonly yes --appendfsync everysec); else aof=(--appendonly no); fi
    redis-server --bind 127.0.0.1 --port "$port" --save '' "${aof[@]}" --dir "$dir" \
      --protected-mode no --daemonize no > "$dir/log" 2>&1 &
    echo $! > "$dir/pid"; wait_port "$port" ;;
  nats|jetstream)
    command -v nats-server >/dev/null || missing nats-server
    store=/dev/shm/fogline-bench-nats-$port
    [ "$mode" = persistent ] && store=$dir/jetstream
    echo "$store" > "$dir/datadir"
    cat > "$dir/nats.conf" <<EOF
host: 127.0.0.1
port: $port
max_payload: 8MB
jetstream { store_dir: "$store" }
EOF
    nats-server -c "$dir/nats.conf" > "$dir/log" 2>&1 &
    echo $! > "$dir/pid"; wait_port "$port" ;;
  rabbitmq)
    [ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || missing rabbitmq-server
    epmd=$(command -v epmd || ls /usr/lib/erlang/erts-*/bin/epmd 2>/dev/null | head -1 || true)
    [ -n "$epmd" ] || missing epmd
    cat > "$dir/env" <<EOF
export HOME="$dir/home" RABBITMQ_NODENAME="fb$port@localhost" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
export RABBITMQ_NODE_PORT=$port RABBITMQ_DIST_PORT=$((port + 1)) ERL_EPMD_ADDRESS=127.0.0.1
export ERL_EPMD_PORT=$((port + 2)) RABBITMQ_MNESIA_BASE="$dir/mnesia" RABBITMQ_LOG_BASE="$dir/logs"
export RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf"
EOF
    mkdir -p "$dir/home" "$dir/mnesia" "$dir/logs"
    echo "[]." > "$dir/enabled_plugins"
    printf 'loopback_users = none\nlisteners.tcp.default = 127.0.0.1:%s\n' "$port" > "$dir/rabbitmq.conf"
    # shellcheck disable=SC1091
    . "$dir/env"
    "$epmd" -address 127.0.0.1 -port "$ERL_EPMD_PORT" > "$dir/epmd.log" 2>&1 &
    echo $! > "$dir/epmd.pid"
    # Wait for our epmd, or the VM would start a daemon epmd of its own that no pid tracks.
    wait_port "$ERL_EPMD_PORT"
    /usr/lib/rabbitmq/bin/rabbitmq-server > "$dir/log" 2>&1 &
    echo $! > "$dir/wrapper.pid"
    wait_port "$port" 600
    /usr/lib/rabbitmq/bin/rabbitmqctl -q await_startup > /dev/null
    # The sampled process is the Erlang VM itself, not the wrapper script.
    /usr/lib/rabbitmq/bin/rabbitmqctl -q eval 'os:getpid().' | tr -dc '0-9' > "$dir/pid" ;;
  kafka)
    libs=$here/.install/kafka/libs
    [ -f "$libs/.complete" ] || missing "Kafka jars in $libs"
    command -v java >/dev/null || missing java
    data=/dev/shm/fogline-bench-kafka-$port
    [ "$mode" = persistent ] && data=$dir/data
    rm -rf "$data"; echo "$data" > "$dir/datadir"
    cat > "$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$((port + 1))
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$((port + 1))
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
message.max.bytes=10485760
replica.fetch.max.bytes=10485760
# A full run writes tens of GB (seed004's 10 kB cell alone about 9 GB per run): keep at most
# 256 MiB per partition, in 64 MiB segments, checked every second, and delete dropped segments
# at once (the default 60 s delay let 55 GB of deleted segments pile up at 1 GB/s).
log.segment.bytes=67108864
log.retention.bytes=268435456
log.retention.check.interval.ms=1000
log.segment.delete.delay.ms=0
EOF
    cp "$here/kafka/log4j.properties" "$dir/log4j.properties"
    uuid=$(java -cp "$libs/*" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)
    java -cp "$libs/*" kafka.tools.StorageTool format -t "$uuid" -c "$dir/server.properties" > "$dir/format.log" 2>&1
    java -Xms1g -Xmx1g -Dlog4j.configuration="file:$dir/log4j.properties" -cp "$libs/*" \
      kafka.Kafka "$dir/server.properties" > "$dir/log" 2>&1 &
    echo $! > "$dir/pid"; wait_port "$port" 600 ;;
  *) echo "start.sh: unknown peer '$peer'" >&2; exit 2 ;;
esac
cat "$dir/pid"
