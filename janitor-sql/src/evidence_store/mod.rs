//! Application evidence on PostgreSQL: `application_events`, `device_links` and `identity_subjects`.
