//! The shared inference budget: calls per window, concurrent leases and a circuit breaker, for every instance.
