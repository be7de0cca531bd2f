-- Keeps a claimed step's outcome as the key's answer in the step itself, in the hot
-- store's own terms: status `kind` ('hold', 'release'); body: the hold's id, then the
-- step's reply, a line each. The node answers a retry from it as it answered the
-- first request, so no second call keeps the answer. K: the record.
local function keep_outcome(K, kind, hold_id, reply)
  redis.call('HSET', K[1], 'status', kind, 'body', hold_id .. '\n' .. table.concat(reply, '\n'))
end
