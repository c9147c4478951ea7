-- Login-labelled learning (optional, off by default), in the Janitor 0.7 layout so instances in other
-- languages share the rows: one latest snapshot per anonymous learning session, the subject a later verified
-- login labelled it with, and the shadow predictor's guess. Rows go with their subject by cascade. Times are
-- epoch milliseconds; `disputed` is 0 or 1.

CREATE TABLE IF NOT EXISTS learning_sessions (
  id TEXT PRIMARY KEY,
  scope TEXT NOT NULL,
  started_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  observed_at BIGINT NOT NULL,
  signals_json JSONB NOT NULL,
  subject_id TEXT REFERENCES identity_subjects(id) ON DELETE CASCADE,
  verified_at BIGINT,
  disputed INTEGER NOT NULL DEFAULT 0,
  prediction_status TEXT NOT NULL,
  predicted_subject_id TEXT REFERENCES identity_subjects(id) ON DELETE CASCADE,
  prediction_score REAL
);
CREATE INDEX IF NOT EXISTS idx_learning_scope_verified ON learning_sessions (scope, verified_at DESC);
CREATE INDEX IF NOT EXISTS idx_learning_scope_expiry ON learning_sessions (scope, expires_at);
CREATE INDEX IF NOT EXISTS idx_learning_subject_verified ON learning_sessions (subject_id, verified_at DESC);
CREATE INDEX IF NOT EXISTS idx_learning_predicted_subject ON learning_sessions (predicted_subject_id);
-- The bounded retrieval of a shadow prediction's examples: one bucket by first language, one by timezone.
CREATE INDEX IF NOT EXISTS idx_learning_scope_language ON learning_sessions
  (scope, (signals_json #>> '{languages,0}'), verified_at DESC, id DESC)
  WHERE subject_id IS NOT NULL AND disputed = 0;
CREATE INDEX IF NOT EXISTS idx_learning_scope_timezone ON learning_sessions
  (scope, (signals_json ->> 'timezone'), verified_at DESC, id DESC)
  WHERE subject_id IS NOT NULL AND disputed = 0;
