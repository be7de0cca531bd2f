#!/usr/bin/env python3
"""Drives one hot script straight into a Redis: a 250,000-unit GA event is written
(bench/script_cost_setup.lua), WARM holds are taken, then HOLDS more, each a best-
available hold of one unit, pipelined 64 deep over one connection; prints the script's
usec_per_call from INFO commandstats over the measured holds.
Usage: script_cost.py PORT SOURCE_FILE claimed-hold|hold HOLDS
  claimed-hold: ClaimedHolds::hold's script with realistic arguments (16 replay shards,
    a clock advancing ~12 holds a millisecond, 6,000 buyers), each followed by the
    replay's finish (idem_finish.lua), as a node sends them; FINISH=0 leaves it out.
  hold: SeatArbiter::hold's script with the arbiter bench's arguments (redis-benchmark's).
WARM (default 10,000) holds first, so the replay shards' indexes and the holds hash have
their steady-state encodings. CALLGRIND_PID: a valgrind --tool=callgrind redis-server
whose counters are dumped before and after the measured holds."""
import hashlib, os, socket, subprocess, sys, time, uuid

port, source, kind, holds = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
here = os.path.dirname(os.path.abspath(__file__))
lua = os.path.join(here, "..", "crates", "store-redis", "src", "lua")
finish_src = open(os.path.join(lua, "idem_finish.lua")).read()
conn = socket.create_connection(("127.0.0.1", port))
replies = conn.makefile("rb")


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def reply():
    line = replies.readline()
    kind, rest = line[:1], line[1:-2]
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        return None if int(rest) < 0 else replies.read(int(rest) + 2)[:-2]
    if kind == b"*":
        return None if int(rest) < 0 else [reply() for _ in range(int(rest))]
    return rest


def call(*args):
    conn.sendall(encode(*args))
    return reply()


prefix = "sc" + uuid.uuid4().hex[:8]
event = ["{%s:1}:%s" % (prefix, k) for k in
         "meta free sold layout freez holds dl taken unrep fin loading claim".split()]
script = call("SCRIPT", "LOAD", open(source).read()).decode()
finish = call("SCRIPT", "LOAD", finish_src).decode()
call("EVAL", open(os.path.join(here, "script_cost_setup.lua")).read(), 12, *event, 250000,
     "1" if kind == "hold" else "0")
node, buyers, now0 = uuid.uuid4().hex, [str(uuid.uuid4()) for _ in range(6000)], int(time.time() * 1000)
with_finish = kind == "claimed-hold" and os.environ.get("FINISH", "1") == "1"


def commands(i):
    if kind == "hold":
        return [encode("EVALSHA", script, 11, *event[:11], "%d" % i, "b%d" % i, 1700000480000,
                       1700000000000, 100000, "", "B", 0, 1, 0)]
    now = now0 + i // 12
    digest = hashlib.sha256(b"key%d" % i).digest()
    shard, rid = "{%s:idem:%d}" % (prefix, digest[0] % 16), digest[:16].hex()
    record = shard + ":r:" + rid
    out = [encode("EVALSHA", script, 15, *event, record, shard + ":ix", shard + ":nodes",
                  rid, hashlib.sha256(b"fp%d" % i).digest(), now, 60000, 86400000, node, 10000,
                  31250, shard + ":r:", uuid.uuid4().hex, buyers[i % 6000], now + 480000, now,
                  100000, "", "B", 0, 1, 0)]
    if with_finish:
        out.append(encode("EVALSHA", finish, 1, record, 201, '{"hold_id":"x","price":5000}'))
    return out


def run(first, count):
    last = None
    for start in range(first, first + count, 64):
        batch = [c for i in range(start, min(first + count, start + 64)) for c in commands(i)]
        conn.sendall(b"".join(batch))
        for _ in batch:
            last = reply()
    return last


def dump(tag):
    if os.environ.get("CALLGRIND_PID"):
        subprocess.run(["callgrind_control", "-d", tag, os.environ["CALLGRIND_PID"]],
                       capture_output=True, check=True)


warm = int(os.environ.get("WARM", "10000"))
run(0, warm)
call("CONFIG", "RESETSTAT")
dump("warm")
last = run(warm, holds)
dump("measured")
stats = call("INFO", "commandstats").decode()
evalsha = next(l for l in stats.split("\r\n") if l.startswith("cmdstat_evalsha:"))
fields = dict(kv.split("=") for kv in evalsha.split(":", 1)[1].split(","))
per_hold = int(fields["usec"]) / holds
held = call("HGET", event[0], "held")
assert last and (last == 1 or last[0] == b"ok"), f"the last hold answered {last}"
print(f"{kind}: {holds} holds after {warm}; EVALSHA {fields['usec_per_call']} usec/call, "
      f"{per_hold:.2f} usec/hold; held {held.decode()}")
cursor = b"0"
while True:
    cursor, keys = call("SCAN", cursor, "MATCH", f"*{prefix}*", "COUNT", 1000)
    if keys:
        call("DEL", *keys)
    if cursor == b"0":
        break
