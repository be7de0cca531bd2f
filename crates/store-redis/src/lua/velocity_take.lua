-- VelocityStore::take. KEYS[1]: a checkout's stash. Answers its value and deletes it,
-- or nil if there is none (it lapsed, or another caller took it).
local v = redis.call('GET', KEYS[1])
if v then
  redis.call('DEL', KEYS[1])
end
return v
