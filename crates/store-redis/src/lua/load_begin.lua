-- Starts a load: forgets the event (marker first, so nobody treats it as loaded) and
-- records this loader's token; every later step of the load checks it, so a second,
-- concurrent load makes this one fail instead of mixing their halves. ARGV: token,
-- ttl_ms, and '1' for the load of a lost event: 'loaded', and nothing changes, when
-- the event is loaded (another rebuild finished first; its holds stay). Loaded as
-- `loaded()` says: the marker alone may outlive keys a fault deleted, and such an
-- event must be loaded again, not left unloadable.
if ARGV[3] == '1' and loaded() then return 'loaded' end
redis.call('DEL', META, FREE, SOLD, LAYOUT, FREEZ, HOLDS, DL, TAKEN, UNREP, FIN)
redis.call('SET', LOADING, ARGV[1], 'PX', ARGV[2])
return 'ok'
