-- Prepended to every arbiter script (scripts.rs), after the generated MOVE_LIST, LIVE
-- and moved() of the hold state machine (hold_states.rs). KEYS is always the event's
-- full key list in this order, all under one hash tag, so every key a script may touch
-- is declared and lives in the event's one Cluster slot.
local META, FREE, SOLD, LAYOUT = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local FREEZ, HOLDS, DL, TAKEN = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local UNREP, FIN, LOADING, CLAIM = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
-- A free seat's score in FREEZ: section * SLOT + its place in the section's best-first
-- order, so one sorted set serves every section and a range query is "best in section".
local SLOT = 1048576
-- Bytes per seat in LAYOUT: section u16, row u16, rank u32, place u32, price i64.
local REC = 20

-- Loaded means the marker written last by a load AND the structural keys are there: a
-- fault that deleted some of them must look unloaded so the engine rebuilds (P5).
local function loaded()
  return redis.call('HGET', META, 'loaded') == '1'
    and redis.call('EXISTS', FREE, SOLD, LAYOUT) == 3
end

-- loaded() and the settings a hold needs in one read: nil when the event is not
-- loaded, else { '1', max per buyer, capacity, seated flags } (text, as stored).
local function loaded_settings()
  local m = redis.call('HMGET', META, 'loaded', 'max', 'cap', 'seated')
  if m[1] ~= '1' or redis.call('EXISTS', FREE, SOLD, LAYOUT) ~= 3 then return nil end
  return m
end

local function seat_info(seat)
  local raw = redis.call('GETRANGE', LAYOUT, seat * REC, seat * REC + REC - 1)
  return struct.unpack('>I2I2I4I4i8', raw)
end

-- A hold record: state|expires_at|buyer|order|seat,seat|price,price, the state one
-- letter (H held, C checking out, P payment pending, S sold, R released, E expired).
-- A record is `state|deadline|buyer|order|seats|prices`, then `|key` when the hold is
-- bound to a proof-of-possession key (k is '' when it is not).
local function parse(rec)
  local st, x, b, o, seats, prices, k =
    string.match(rec, '^(%a)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|?(.*)$')
  return { st = st, x = x, b = b, o = o, seats = seats, prices = prices, k = k }
end

-- One concatenation, no table: a record is written by every hold.
local function record(st, x, b, o, seats, prices, k)
  local rec = st .. '|' .. x .. '|' .. b .. '|' .. o .. '|' .. seats .. '|' .. prices
  if k and k ~= '' then rec = rec .. '|' .. k end
  return rec
end

local function format(h)
  return record(h.st, h.x, h.b, h.o, h.seats, h.prices, h.k)
end

local function seat_list(h)
  local out = {}
  for s in string.gmatch(h.seats, '%d+') do out[#out + 1] = tonumber(s) end
  return out
end

local function is_live(st)
  return st ~= nil and #st == 1 and string.find(LIVE, st, 1, true) ~= nil
end

local function put_back(seat)
  local section, _, _, place = seat_info(seat)
  redis.call('SETBIT', FREE, seat, '1')
  redis.call('ZADD', FREEZ, section * SLOT + place, seat)
end

-- Finished holds stay readable; beyond `keep` the oldest are forgotten so the hash
-- cannot grow for ever.
local function finished(nonce, keep)
  local n = redis.call('RPUSH', FIN, nonce)
  while n > keep do
    redis.call('HDEL', HOLDS, redis.call('LPOP', FIN))
    n = n - 1
  end
end

-- A live hold ended by `move` ('release' or 'expire'): seats back in stock, counters
-- follow.
local function end_hold(nonce, h, move, keep)
  local seats = seat_list(h)
  for _, s in ipairs(seats) do put_back(s) end
  redis.call('ZREM', DL, nonce)
  if redis.call('HINCRBY', TAKEN, h.b, -#seats) <= 0 then
    redis.call('HDEL', TAKEN, h.b)
  end
  redis.call('HINCRBY', META, 'held', -#seats)
  redis.call('HINCRBY', META, 'active', '-1')
  h.st = moved(move, h.st)
  local rec = format(h)
  redis.call('HSET', HOLDS, nonce, rec)
  finished(nonce, keep)
  return rec
end

-- A live hold -> sold: its seats leave stock for good; the buyer's count stays (held +
-- sold). Returns the new record.
local function sell_hold(nonce, h, keep)
  local seats = seat_list(h)
  for _, s in ipairs(seats) do redis.call('SETBIT', SOLD, s, '1') end
  redis.call('HINCRBY', META, 'held', -#seats)
  redis.call('HINCRBY', META, 'sold', #seats)
  redis.call('HINCRBY', META, 'active', '-1')
  redis.call('ZREM', DL, nonce)
  h.st = moved('commit', h.st)
  local rec = format(h)
  redis.call('HSET', HOLDS, nonce, rec)
  finished(nonce, keep)
  return rec
end

-- Named seats from args[first..] (hold and retake; args is ARGV unless given): the
-- list, or nil and the refusal, checked in the order the in-process arbiter's
-- `check_named` checks them.
local function named_seats(first, max, cap, args)
  args = args or ARGV
  local n = #args - first + 1
  if n <= 0 or n > max then return nil, { 'bad_quantity' } end
  local seats, seen = {}, {}
  for i = first, #args do
    local s = tonumber(args[i])
    if seen[s] then return nil, { 'bad_quantity' } end
    seen[s] = true
    seats[#seats + 1] = s
  end
  for _, s in ipairs(seats) do
    if s >= cap then return nil, { 'no_such_seat', tostring(s) } end
  end
  return seats
end

-- P6, the hot store's half, for hold and retake alike: a buyer's held plus sold seats
-- never pass the limit (the ledger's buyer_within_limit CHECK is the other half). The
-- arbiter cases a_buyer_cannot_hold_more_than_the_limit_across_holds and
-- a_retake_keeps_the_buyer_limit pin this and the in-process arbiter together.
local function over_limit(buyer, q, max)
  if (tonumber(redis.call('HGET', TAKEN, buyer)) or 0) + q > max then
    return { 'limit_exceeded', tostring(max) }
  end
end

-- The refusal for the first of `seats` that is not free, or nil.
local function not_free(seats)
  for _, s in ipairs(seats) do
    if redis.call('GETBIT', FREE, s) == 0 then return { 'seat_unavailable', tostring(s) } end
  end
end

-- Takes free `seats` for `buyer` under a live hold due at `deadline`: stock, the
-- buyer's count and the counters follow. `names`, when given, are the seats as FREEZ
-- lists them (pick's), so no seat number is turned back into text. Returns the
-- record's seats and prices fields.
-- Numbers handed to redis.call are printed with "%.17g" by Redis 7.0, which costs
-- more than the command itself here: arguments go as text wherever they exist as text.
local function take_seats(nonce, buyer, seats, deadline, names)
  names = names or {}
  local prices = {}
  for i, s in ipairs(seats) do
    local _, _, _, _, price = seat_info(s)
    local name = names[i] or tostring(s)
    names[i], prices[i] = name, string.format('%d', price)
    redis.call('SETBIT', FREE, name, '0')
    redis.call('ZREM', FREEZ, name)
  end
  local n = string.format('%d', #seats)
  redis.call('HINCRBY', TAKEN, buyer, n)
  redis.call('HINCRBY', META, 'held', n)
  redis.call('HINCRBY', META, 'active', '1')
  redis.call('ZADD', DL, deadline, nonce)
  return table.concat(names, ','), table.concat(prices, ',')
end

-- Seat/buyer pairs from ARGV[first..], every seat checked to exist first: returns the
-- list of {seat, buyer}, or nil and the first seat that does not exist.
local function seat_buyer_pairs(first)
  local cap = tonumber(redis.call('HGET', META, 'cap'))
  local out = {}
  for i = first, #ARGV - 1, 2 do
    local s = tonumber(ARGV[i])
    if not s or s < 0 or s >= cap then return nil, ARGV[i] end
    out[#out + 1] = { s, ARGV[i + 1] }
  end
  return out
end

-- Expires one hold if it is still live; returns its report "nonce|record" or nil.
local function expire_one(nonce, keep)
  local rec = redis.call('HGET', HOLDS, nonce)
  local h = rec and parse(rec)
  if not h or not is_live(h.st) then
    -- Unreachable while DL lists only live holds; drop a stray so no sweep spins on it.
    redis.call('ZREM', DL, nonce)
    return nil
  end
  return nonce .. '|' .. end_hold(nonce, h, 'expire', keep)
end

-- Expiries done on the way (by hold or pin) are kept for the worker's next sweep,
-- bounded like the finished holds.
local function report_later(report, keep)
  local n = redis.call('RPUSH', UNREP, report)
  if n > keep then redis.call('LTRIM', UNREP, -keep, -1) end
end

-- `keep` may be text: it is read as a number only when something is due.
local function expire_due_unreported(now, keep)
  while true do
    local due = redis.call('ZRANGEBYSCORE', DL, '-inf', now, 'LIMIT', '0', '100')
    if #due == 0 then return end
    keep = tonumber(keep)
    for _, nonce in ipairs(due) do
      local r = expire_one(nonce, keep)
      if r then report_later(r, keep) end
    end
  end
end
