-- wrk script for the door: each request scans the next barcode (in file order, so the
-- first pass over the file admits and later passes answer already_scanned) with one gate's
-- credential and a fresh Idempotency-Key.
-- Env: BARCODES (file, one barcode per line), EVENT, GATE (credential), THREADS (wrk's
-- -t, default 2: each thread's own Lua state cannot see how many threads setup made).
dofile(debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") .. "threads.lua")
local barcodes = {}
local counter = 0
local thread_id = 0
local nthreads = tonumber(os.getenv("THREADS") or "2")

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
  report(summary, latency)
end
