//! xtask's integration tests, one binary: each module was a test file of its own. They run the built `xtask`
//! (`CARGO_BIN_EXE_xtask`) or read the repository's files; `tests/data/` holds their inputs.

mod capacity_commands;
mod capacity_tables;
mod conformance;
mod test_command;
