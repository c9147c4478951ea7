//! The Jev evaluator: an HTTP client for the provider protocol, behind the shared inference budget.
