//! The compact state and questions sent to a Jev provider, and the strict reading of its answers (no I/O).
