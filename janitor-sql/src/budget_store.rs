//! The shared inference budget on PostgreSQL: compare-and-swap on the `evaluation_controls` row.
