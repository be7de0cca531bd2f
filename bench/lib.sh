# What the bench scripts share: starting a server in the background and waiting for the
# address it listens on, stopping what they started, the machine, a process's CPU time.
# Sourced after `cd` to the repository and `work=$(mktemp -d)`: servers keep their
# output in $work/NAME.out and their process id in $work/NAME.pid.

listening() { # file tries -> prints the base URL a server wrote to file, looking every 0.1 s; fails after tries
  local file=$1 tries=$2 addr
  for _ in $(seq "$tries"); do
    addr=$(grep -o 'listening on http://[0-9.:]*' "$file" 2>/dev/null | head -1 | cut -d' ' -f3) || true
    [ -n "${addr:-}" ] && { echo "$addr"; return 0; }
    sleep 0.1
  done
  return 1
}

start() { # name command... -> prints base URL; the server runs in the background
  local name=$1; shift
  "$@" > "$work/$name.out" 2>/dev/null &
  echo $! > "$work/$name.pid"
  listening "$work/$name.out" 100 || { echo "server did not start" >&2; exit 1; }
}

stop_servers() { # every server started, by the process ids kept in $work
  kill $(cat "$work"/*.pid 2>/dev/null) 2>/dev/null || true
}

machine() { # cores and CPU model
  echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
}

ticks_of() { # pids... -> their user + system CPU time so far, in clock ticks, summed
  local t=0 p
  for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
  echo "$t"
}

cpu() { # name -> the server's user + system CPU time so far, in clock ticks
  ticks_of "$(cat "$work/$1.pid")"
}

measured() { # target label wrk-output ticks-used -> prints one line; sets rps and n
  # (requests a second and requests, from a wrk run with the report() of bench/*.lua)
  local target=$1 label=$2 out=$3 used=$4 tail per
  rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  tail=$(echo "$out" | grep '^p50')
  n=$(echo "$tail" | sed -n 's/.*requests \([0-9]*\).*/\1/p')
  per=$(python3 -c "print(f'{$used / $(getconf CLK_TCK) / max($n, 1) * 1e6:.1f}')")
  printf '%-9s %-7s %10s req/s  %s  cpu %s us/req\n' "$target" "$label" "$rps" "$tail" "$per"
}
