-- wrk script for the queue's join path: each request joins $EVENT with the next buyer
-- token of its thread's share of $TOKENS (one per line; THREADS = wrk's -t) and a fresh
-- Idempotency-Key, so every join is a first join while the tokens last (a thread that
-- runs out starts its share again: those are retries, reported by done()).
local tokens = {}
-- Globals, so done() can read each thread's (t:get).
counter = 0
share = 0
local thread_id = 0
local salt = os.getenv("SALT") or "0"
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  thread_id = id
  local threads_n = tonumber(os.getenv("THREADS") or "1")
  local n = 0
  for line in io.lines(os.getenv("TOKENS")) do
    if n % threads_n == thread_id then
      tokens[#tokens + 1] = line
    end
    n = n + 1
  end
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
  io.write(string.format("p50 %.2f ms  p99 %.2f ms  requests %d  first joins <= %d  errors(connect/read/write/timeout/status) %d/%d/%d/%d/%d\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.requests, first,
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout, summary.errors.status))
end
