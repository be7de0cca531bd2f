-- wrk script for the queue's join path: each request joins $EVENT with the next buyer
-- token of its thread's share of $TOKENS (one per line; THREADS = wrk's -t) and a fresh
-- Idempotency-Key, so every join is a first join while the tokens last (a thread that
-- runs out starts its share again: those are retries, reported by done()).
dofile(debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") .. "threads.lua")
local tokens = {}
-- Globals, so done() can read each thread's (t:get).
counter = 0
share = 0
local thread_id = 0
local salt = os.getenv("SALT") or "0"

function init(args)
  thread_id = id
  tokens = share_of(os.getenv("TOKENS"), "1")
  share = #tokens
  wrk.method = "POST"
  wrk.path = "/v1/events/" .. os.getenv("EVENT") .. "/queue"
  wrk.body = "{}"
end

function request()
  counter = counter + 1
  return wrk.format(nil, nil, {
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = "j-" .. salt .. "-" .. thread_id .. "-" .. counter,
    ["Authorization"] = "Bearer " .. tokens[(counter - 1) % #tokens + 1],
  })
end

function done(summary, latency, requests)
  local first = 0
  for _, t in ipairs(threads) do
    local sent, share = t:get("counter"), t:get("share")
    first = first + math.min(sent, share)
  end
  report(summary, latency, string.format("first joins <= %d  ", first))
end
