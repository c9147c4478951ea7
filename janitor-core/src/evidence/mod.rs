//! Application evidence: events the application reports, velocity counts, device links and erasure.
