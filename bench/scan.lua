-- wrk script for the door: each request scans the next barcode (in file order, so the
-- first pass over the file admits and later passes answer already_scanned) with one gate's
-- credential and a fresh Idempotency-Key.
-- Env: BARCODES (file, one barcode per line), EVENT, GATE (credential), THREADS (wrk's
-- -t, default 2: each thread's own Lua state cannot see how many threads setup made).
local barcodes = {}
local counter = 0
local thread_id = 0
local nthreads = tonumber(os.getenv("THREADS") or "2")
local made = 0

function setup(thread)
  thread:set("id", made)
  made = made + 1
end

function init(args)
  for line in io.lines(os.getenv("BARCODES")) do
    barcodes[#barcodes + 1] = line
  end
  thread_id = id
  wrk.method = "POST"
  wrk.path = "/v1/events/" .. os.getenv("EVENT") .. "/scans"
end

function request()
  counter = counter + 1
  -- The threads interleave over the file: thread t takes lines t, t+n, t+2n, ...
  local i = ((counter - 1) * nthreads + thread_id) % #barcodes + 1
  local headers = {
    ["Content-Type"] = "application/json",
    ["Authorization"] = "Bearer " .. os.getenv("GATE"),
    ["Idempotency-Key"] = "s-" .. thread_id .. "-" .. counter,
  }
  return wrk.format(nil, nil, headers, '{"barcode":"' .. barcodes[i] .. '"}')
end

function done(summary, latency, requests)
  io.write(string.format("p50 %.2f ms  p99 %.2f ms  requests %d  errors(connect/read/write/timeout/status) %d/%d/%d/%d/%d\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.requests,
    summary.errors.connect, summary.errors.read, summary.errors.write, summary.errors.timeout, summary.errors.status))
end
