-- wrk script that signs up buyers (POST /v1/buyers) and writes each new buyer token to
-- "$OUT.<thread>", one per line; each thread stops after $COUNT tokens (use -t with
-- THREADS). The server must allow self sign-up without a per-address rate.
dofile(debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") .. "threads.lua")
local count, written, sent = 0, 0, 0
local out = nil
local thread_id = 0

function init(args)
  thread_id = id
  count = tonumber(os.getenv("COUNT"))
  out = io.open(os.getenv("OUT") .. "." .. thread_id, "w")
  math.randomseed(os.time() * 1000 + thread_id)
  wrk.method = "POST"
  wrk.path = "/v1/buyers"
end

function request()
  sent = sent + 1
  -- The key is a secret of at least 32 characters (a retry with it returns the token).
  local key = string.format("mint-%d-%d-%08x%08x-abcdefghijklmnopqrstuvwxyz",
    thread_id, sent, math.random(0, 0x7fffffff), math.random(0, 0x7fffffff))
  return wrk.format(nil, nil, { ["Idempotency-Key"] = key })
end

function response(status, headers, body)
  if status == 201 then
    local token = body:match('"token":"([^"]+)"')
    if token then
      out:write(token, "\n")
      written = written + 1
    end
  end
  if written >= count then
    out:flush()
    wrk.thread:stop()
  end
end
