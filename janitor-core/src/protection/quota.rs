//! Request quotas: global (optionally sharded), per account and per session.
