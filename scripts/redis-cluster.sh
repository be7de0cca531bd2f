#!/usr/bin/env bash
# A throw-away 3-node Redis Cluster on free loopback ports, for tests and benches.
#
#   scripts/redis-cluster.sh start DIR   start it with its files in DIR (created if
#                                        missing); prints the node URLs, comma-separated
#   scripts/redis-cluster.sh stop DIR    stop the nodes started in DIR and delete DIR
#
# No persistence, no replicas: it only has to live as long as a test run.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
[[ -n "$cmd" && -n "$dir" ]] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

port_is_free() {
  # A connection that succeeds means someone listens there.
  ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# A port whose cluster bus port (+10000) is free too.
pick_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 9000))
    if port_is_free "$p" && port_is_free $((p + 10000)) && ! grep -qx "$p" "$dir/ports" 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  echo "no free loopback port found" >&2
  exit 1
}

start() {
  mkdir -p "$dir"
  : >"$dir/ports"
  local ports=()
  for _ in 1 2 3; do
    local p
    p=$(pick_port)
    echo "$p" >>"$dir/ports"
    mkdir -p "$dir/$p"
    redis-server --port "$p" --bind 127.0.0.1 --protected-mode yes \
      --cluster-enabled yes --cluster-config-file "$dir/$p/nodes.conf" \
      --cluster-node-timeout 2000 --save "" --appendonly no --dir "$dir/$p" \
      --daemonize yes --pidfile "$dir/$p/redis.pid" --logfile "$dir/$p/redis.log"
    ports+=("$p")
  done
  # Generous waits: on a loaded machine a node can take seconds to start listening.
  for p in "${ports[@]}"; do
    for _ in $(seq 1 600); do
      redis-cli -p "$p" ping >/dev/null 2>&1 && break
      sleep 0.05
    done
  done
  redis-cli --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 \
    || { cat "$dir/create.log" >&2; stop; exit 1; }
  for p in "${ports[@]}"; do
    for _ in $(seq 1 200); do
      redis-cli -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' && break
      sleep 0.05
    done
  done
  local urls=("${ports[@]/#/redis://127.0.0.1:}")
  (IFS=,; echo "${urls[*]}")
}

stop() {
  [[ -f "$dir/ports" ]] || return 0
  while read -r p; do
    local pidfile="$dir/$p/redis.pid"
    # Only the processes this script started, by their pid.
    [[ -f "$pidfile" ]] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done <"$dir/ports"
  sleep 0.2
  rm -rf "$dir"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
