//! Request quotas on PostgreSQL: one atomic upsert per counter on `protection_quotas`.
