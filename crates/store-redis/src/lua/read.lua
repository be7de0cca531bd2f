-- Reads of a loaded event in one round trip (GET, HGET or HMGET behind the check that
-- the event is loaded). ARGV[1]: 'loaded' | 'avail' | 'sold' | 'counts' | 'hold'.
if not loaded() then return { 'unknown_event' } end
local what = ARGV[1]
if what == 'loaded' then return { 'ok' } end
if what == 'avail' then return { 'ok', redis.call('GET', FREE) } end
if what == 'sold' then return { 'ok', redis.call('GET', SOLD) } end
if what == 'hold' then return { 'ok', redis.call('HGET', HOLDS, ARGV[2]) or '' } end
local c = redis.call('HMGET', META, 'cap', 'held', 'sold', 'active')
return { 'ok', c[1] or '0', c[2] or '0', c[3] or '0', c[4] or '0' }
