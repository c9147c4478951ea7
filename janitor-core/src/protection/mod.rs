//! Protection of the identify endpoint, the application's sign-in and the evaluator: request quotas, the
//! sign-in's failure budgets, and the shared inference budget.
//!
//! Each has its arithmetic here, a store trait (the sign-in's counters live in the quota store), and an
//! in-memory store; `janitor-sql` implements the traits on PostgreSQL with the same rows as Janitor instances
//! in other languages, and its own rows under a prefix those instances never write.

pub mod budget;
pub mod quota;
pub mod signin;
