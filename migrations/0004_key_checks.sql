-- One row per label namespace: a keyed fingerprint of the secret its labels are made with, written by the first
-- instance that checks. An instance started with another secret finds a different fingerprint and refuses to
-- start, instead of splitting quotas, budgets and evidence under labels no other instance shares. The
-- fingerprint is an HMAC label under the secret: it does not reveal the secret.
CREATE TABLE IF NOT EXISTS janitor_key_checks (
  id TEXT PRIMARY KEY,
  fingerprint TEXT NOT NULL,
  created_at BIGINT NOT NULL
);
