//! Protection of the identify endpoint and of the evaluator: request quotas and the shared inference budget.
//!
//! Each has its arithmetic here, a store trait, and an in-memory store; `janitor-sql` implements the traits on
//! PostgreSQL with the same rows as Janitor instances in other languages.

pub mod budget;
pub mod quota;
