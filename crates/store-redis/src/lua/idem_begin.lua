-- IdempotencyStore::begin (idem_claim.lua). KEYS: the record, its shard's index and its
-- shard's node heartbeats. ARGV: id, fingerprint, now, lease_ms, retention_ms, node,
-- dead_after_ms, shard cap, record key prefix.
return idem_claim(KEYS, ARGV)
