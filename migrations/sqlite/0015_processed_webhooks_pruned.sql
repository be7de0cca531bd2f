-- Processed webhook ids are forgotten a while after their claim (Ledger::prune_webhooks,
-- idempotency.webhook_ids_kept_s), oldest first: the index finds them without a scan.
CREATE INDEX processed_webhooks_by_claim ON processed_webhooks (claimed_at);
