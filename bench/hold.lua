-- wrk script for the hold path: each request holds one unit with the next admitted
-- buyer's token (round robin) and a fresh Idempotency-Key.
-- Env: TOKENS (file, one admission token per line), EVENT, SECTION, SALT (optional).
-- With PROOFS (a file of "token<TAB>DPoP proof" lines, bench/prepare.py proofs) and
-- THREADS (wrk's -t), each request takes the next line of its thread's share instead:
-- its own token and a proof used once (a thread that runs out starts its share again,
-- and the server refuses those replays: they show as status errors).
dofile(debug.getinfo(1, "S").source:match("^@(.-)[^/]*$") .. "threads.lua")
local tokens = {}
local proofs = nil
local counter = 0
local thread_id = 0
-- Distinguishes the keys of concurrent wrk processes sharing one idempotency store.
local salt = os.getenv("SALT") or "0"

function init(args)
  thread_id = id
  local proof_file = os.getenv("PROOFS")
  if proof_file and proof_file ~= "" then
    proofs = {}
    for _, line in ipairs(share_of(proof_file, "2")) do
      local tab = line:find("\t", 1, true)
      proofs[#proofs + 1] = { line:sub(1, tab - 1), line:sub(tab + 1) }
    end
  else
    for line in io.lines(os.getenv("TOKENS")) do
      tokens[#tokens + 1] = line
    end
  end
  wrk.method = "POST"
  wrk.path = "/v1/events/" .. os.getenv("EVENT") .. "/holds"
  wrk.body = '{"best_available":{"section":"' .. os.getenv("SECTION") .. '","quantity":1}}'
end

function request()
  counter = counter + 1
  local headers = {
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = "k-" .. salt .. "-" .. thread_id .. "-" .. counter,
  }
  if proofs then
    local p = proofs[(counter - 1) % #proofs + 1]
    headers["Authorization"] = "Bearer " .. p[1]
    headers["DPoP"] = p[2]
  else
    headers["Authorization"] = "Bearer " .. tokens[(counter * 7 + thread_id) % #tokens + 1]
  end
  return wrk.format(nil, nil, headers)
end

function done(summary, latency, requests)
  report(summary, latency)
end
