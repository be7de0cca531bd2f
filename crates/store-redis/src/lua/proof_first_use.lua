-- A proof id's first use (the proof-of-possession replay memory).
-- KEYS[1]: the id's key; KEYS[2]: the event's count of ids remembered this window.
-- ARGV[1]: how long to remember the id (ms); ARGV[2]: most ids per window.
-- Returns 'fresh' (remembered now), 'replayed' or 'full' (nothing remembered).
if redis.call('EXISTS', KEYS[1]) == 1 then return 'replayed' end
-- The count starts with the window and lapses with it: at most ARGV[2] ids are
-- remembered per window, so at most twice that at once.
redis.call('SET', KEYS[2], 0, 'NX', 'PX', ARGV[1])
if tonumber(redis.call('GET', KEYS[2])) >= tonumber(ARGV[2]) then return 'full' end
redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], 1, 'PX', ARGV[1])
return 'fresh'
