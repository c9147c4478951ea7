-- The identity directory: keys the application verified for a subject (stored by digest only, never the raw
-- value) and delegations that let one subject act for another. Both go with their subject by cascade.

CREATE TABLE IF NOT EXISTS identity_keys (
  digest TEXT PRIMARY KEY,
  subject_id TEXT NOT NULL REFERENCES identity_subjects(id) ON DELETE CASCADE,
  record JSONB NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_identity_keys_subject ON identity_keys (subject_id);

CREATE TABLE IF NOT EXISTS identity_delegations (
  id TEXT PRIMARY KEY,
  principal_id TEXT NOT NULL REFERENCES identity_subjects(id) ON DELETE CASCADE,
  actor_id TEXT NOT NULL REFERENCES identity_subjects(id) ON DELETE CASCADE,
  expires_at BIGINT NOT NULL,
  record JSONB NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_identity_delegations_expiry ON identity_delegations (expires_at);
CREATE INDEX IF NOT EXISTS idx_identity_delegations_principal ON identity_delegations (principal_id);
CREATE INDEX IF NOT EXISTS idx_identity_delegations_actor ON identity_delegations (actor_id);
