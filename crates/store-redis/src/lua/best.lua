-- Best available, prepended to hold.lua. Reads only; hold.lua takes the seats.

-- Free bits of seats a..b from one GETRANGE of the bitmap (MSB first, as SETBIT).
local function free_bits(a, b)
  local first = math.floor(a / 8)
  local raw = redis.call('GETRANGE', FREE, first, math.floor(b / 8))
  local out = {}
  for i = a, b do
    local byte = string.byte(raw, math.floor(i / 8) - first + 1) or 0
    out[i] = bit.band(byte, bit.rshift(128, i % 8)) ~= 0
  end
  return out
end

-- The free run of q seats in `seat`'s row through `seat` with the lowest rank sum
-- (ties to the lowest start): two reads for the whole neighbourhood, not one per window.
local function best_run_through(seat, q, cap)
  local a, b = math.max(0, seat - q + 1), math.min(cap - 1, seat + q - 1)
  local raw = redis.call('GETRANGE', LAYOUT, a * REC, (b + 1) * REC - 1)
  local free = free_bits(a, b)
  local sec, row = struct.unpack('>I2I2', raw, (seat - a) * REC + 1)
  local rank = {}
  for i = a, b do
    local s2, r2, rk = struct.unpack('>I2I2I4', raw, (i - a) * REC + 1)
    if s2 == sec and r2 == row and free[i] then rank[i] = rk end
  end
  local best_sum, best_start
  for start = a, math.min(seat, b - q + 1) do
    local sum = 0
    for i = start, start + q - 1 do
      if not rank[i] then sum = nil break end
      sum = sum + rank[i]
    end
    if sum and (not best_sum or sum < best_sum) then best_sum, best_start = sum, start end
  end
  return best_sum, best_start
end

-- Walks free seats best first, trying every run through each. A run not yet tried
-- holds only seats ranked at least as badly as the current one, so once the best sum
-- is <= q * that rank nothing better remains: usually a few seats, one pass at worst.
local function best_run(section, q, cap)
  local lo, hi = section * SLOT, section * SLOT + SLOT - 1
  local best_sum, best_start
  while true do
    local batch = redis.call('ZRANGEBYSCORE', FREEZ, lo, hi, 'WITHSCORES', 'LIMIT', '0', '64')
    if #batch == 0 then return best_start end
    for i = 1, #batch, 2 do
      local seat = tonumber(batch[i])
      local _, _, rank = seat_info(seat)
      if best_sum and best_sum <= rank * q then return best_start end
      local sum, start = best_run_through(seat, q, cap)
      if sum and (not best_sum or sum < best_sum or (sum == best_sum and start < best_start)) then
        best_sum, best_start = sum, start
      end
    end
    lo = '(' .. batch[#batch]
  end
end

-- The q best free seats of a section, side by side in one row when asked, the
-- section is seated and such a run exists; nil when fewer than q are free. Also
-- returns the seats as FREEZ lists them when they come from there (take_seats).
-- `cap` is text, read only for a run.
local function pick(section, q, adjacent, seated, cap)
  local lo, hi = section * SLOT, section * SLOT + SLOT - 1
  if adjacent and seated and q > 1 then
    if redis.call('ZCOUNT', FREEZ, lo, hi) < q then return nil end
    local start = best_run(section, q, tonumber(cap))
    if start then
      local out = {}
      for i = 0, q - 1 do out[#out + 1] = start + i end
      return out
    end
  end
  -- Fewer than q listed means fewer than q free: the count without a ZCOUNT.
  local names = redis.call('ZRANGEBYSCORE', FREEZ, lo, hi, 'LIMIT', '0', q)
  if #names < q then return nil end
  local out = {}
  for i, m in ipairs(names) do out[i] = tonumber(m) end
  return out, names
end
