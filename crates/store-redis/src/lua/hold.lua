-- SeatArbiter::hold as a function of its arguments A (ARGV for hold_run.lua, the
-- arguments after the claim's for hold_claimed.lua): nonce, buyer, expires_at, now,
-- keep, key ('' for none), kind, then kind 'N': the seat indices; kind 'B': section, quantity, adjacent
-- (1|0). Replies {'ok', record} or {error code, detail?}.
local function hold(A)
  local nonce, buyer, expires, now = A[1], A[2], A[3], A[4]
  local key, kind = A[6], A[7]
  local event = loaded_settings()
  if not event then return { 'unknown_event' } end
  expire_due_unreported(now, A[5])

  local rec = redis.call('HGET', HOLDS, nonce)
  if rec then
    -- The same hold id again is a retried request: answer as the first time.
    local h = parse(rec)
    if h.b == buyer then return { 'ok', rec } end
    return { 'wrong_state', h.st }
  end

  local max = tonumber(event[2])
  local seats, names, refused
  if kind == 'N' then
    seats, refused = named_seats(8, max, tonumber(event[3]), A)
    if not seats then return refused end
    refused = over_limit(buyer, #seats, max) or not_free(seats)
    if refused then return refused end
  else
    local section, q, adjacent = tonumber(A[8]), tonumber(A[9]), A[10] == '1'
    if q == 0 or q > max then return { 'bad_quantity' } end
    refused = over_limit(buyer, q, max)
    if refused then return refused end
    local flags = event[4]
    if section >= #flags then return { 'no_such_section' } end
    seats, names = pick(section, q, adjacent, string.sub(flags, section + 1, section + 1) == '1', event[3])
    if not seats then return { 'sold_out' } end
  end

  local prices
  names, prices = take_seats(nonce, buyer, seats, expires, names)
  rec = record('H', expires, buyer, '-', names, prices, key)
  redis.call('HSET', HOLDS, nonce, rec)
  return { 'ok', rec }
end
