-- wrk script for the hold path: each request holds one unit with the next admitted
-- buyer's token (round robin) and a fresh Idempotency-Key.
-- Env: TOKENS (file, one admission token per line), EVENT, SECTION, SALT (optional).
local tokens = {}
local counter = 0
local thread_id = 0
-- Distinguishes the keys of concurrent wrk processes sharing one idempotency store.
local salt = os.getenv("SALT") or "0"
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  for line in io.lines(os.getenv("TOKENS")) do
    tokens[#tokens + 1] = line
  end
  thread_id = id
  wrk.method = "POST"
  wrk.path = "/v1/events/" .. os.getenv("EVENT") .. "/holds"
  wrk.body = '{"best_available":{"section":"' .. os.getenv("SECTION") .. '","quantity":1}}'
end

function request()
  counter = counter + 1
  local token = tokens[(counter * 7 + thread_id) % #tokens + 1]
  local headers = {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. token,
    ["Idempotency-Key"] = "k-" .. salt .. "-" .. thread_id .. "-" .. counter,
  }
  return wrk.format(nil, nil, headers)
end

function done(summary, latency, requests)
  io.write(string.format("p50 %.2f ms  p99 %.2f ms  requests %d  errors(connect/read/write/timeout/status) %d/%d/%d/%d/%d\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.requests,
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout, summary.errors.status))
end
