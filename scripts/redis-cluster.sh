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

# A port whose cluster bus port (+10000) is free too. Both stay below the kernel's
# ephemeral range (32768 and up by default), where any outgoing connection could take
# the bus port between this check and the node's bind.
pick_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((10000 + RANDOM % 8000))
    if port_is_free "$p" && port_is_free $((p + 10000)) && ! grep -qx "$p" "$dir/ports" 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  echo "no free loopback port found" >&2
  exit 1
}

# Whether the node on port $1 is the one this script started there (not another
# run's node that took the same port first).
is_ours() {
  local pid
  pid=$(cat "$dir/$1/redis.pid" 2>/dev/null) || return 1
  redis-cli -p "$1" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$pid"
}

# Starts one node and prints its port. A port that looked free can still fail to bind
# (another run took it, or a client socket took its bus port meanwhile), so a node
# that does not come up is given up for another port. The waits are generous: on a
# loaded machine a node can take seconds to start listening.
start_node() {
  local p
  for _ in 1 2 3 4 5; do
    p=$(pick_port)
    echo "$p" >>"$dir/ports"
    mkdir -p "$dir/$p"
    redis-server --port "$p" --bind 127.0.0.1 --protected-mode yes \
      --cluster-enabled yes --cluster-config-file "$dir/$p/nodes.conf" \
      --cluster-node-timeout 2000 --save "" --appendonly no --dir "$dir/$p" \
      --daemonize yes --pidfile "$dir/$p/redis.pid" --logfile "$dir/$p/redis.log"
    for _ in $(seq 1 300); do
      if is_ours "$p"; then
        echo "$p"
        return
      fi
      sleep 0.05
    done
    echo "a Redis node on port $p did not start: $(tail -n 3 "$dir/$p/redis.log" 2>/dev/null)" >&2
    [[ -f "$dir/$p/redis.pid" ]] && kill "$(cat "$dir/$p/redis.pid")" 2>/dev/null || true
  done
  return 1
}

# Waits up to 10 s for the node on port $1 to see the cluster formed; says so if not.
cluster_ok() {
  for _ in $(seq 1 200); do
    redis-cli -p "$1" cluster info 2>/dev/null | grep -q 'cluster_state:ok' && return 0
    sleep 0.05
  done
  echo "the node on port $1 did not report cluster_state:ok within 10 s" >&2
  return 1
}

start() {
  mkdir -p "$dir"
  : >"$dir/ports"
  local ports=()
  for _ in 1 2 3; do
    local p
    p=$(start_node) || { stop; exit 1; }
    ports+=("$p")
  done
  redis-cli --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 \
    || { cat "$dir/create.log" >&2; stop; exit 1; }
  for p in "${ports[@]}"; do
    cluster_ok "$p" || { stop; exit 1; }
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
