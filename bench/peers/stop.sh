#!/usr/bin/env bash
# Stops the peer started by bench/peers/start.sh in DIR, by process id, and removes its
# volatile data. Idempotent: nothing running is not an error.
#   bench/peers/stop.sh DIR
set -uo pipefail
dir=${1:?dir}
[ -d "$dir" ] || exit 0
peer=$(cat "$dir/peer" 2>/dev/null || echo unknown)
stop_pid() {
  local pid=$1
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
}
if [ "$peer" = rabbitmq ] && [ -f "$dir/env" ]; then
  # shellcheck disable=SC1091
  . "$dir/env"
  /usr/lib/rabbitmq/bin/rabbitmqctl -q stop > /dev/null 2>&1 || true
fi
for f in pid wrapper.pid epmd.pid; do
  [ -f "$dir/$f" ] && stop_pid "$(cat "$dir/$f")"
  rm -f "$dir/$f"
done
if [ -f "$dir/datadir" ]; then rm -rf "$(cat "$dir/datadir")"; rm -f "$dir/datadir"; fi
exit 0
