-- Request quotas and the shared inference budget, in the Janitor 0.7 layout (same names, same definitions) so
-- that instances in other languages count against the same rows. Ids are HMAC labels, never raw account or
-- session ids. Times are epoch milliseconds.

-- One row per counter: the global quota (or one per shard), each account, each session.
CREATE TABLE IF NOT EXISTS protection_quotas (
  id TEXT PRIMARY KEY,
  used INTEGER NOT NULL,
  reset_at BIGINT NOT NULL
);
-- Cleanup of windows that have ended.
CREATE INDEX IF NOT EXISTS idx_protection_quota_expiry ON protection_quotas (reset_at);

-- One row per namespace: the evaluator's call budget, its leases and its circuit, updated by compare-and-swap
-- on version.
CREATE TABLE IF NOT EXISTS evaluation_controls (
  id TEXT PRIMARY KEY,
  version BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  record JSONB NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_evaluation_control_expiry ON evaluation_controls (expires_at);
