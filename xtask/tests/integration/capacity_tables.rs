//! docs/CAPACITY.md's result tables are the committed reports': `cargo xtask capacity-tables --check` passes
//! on the repository as committed.

use xtask::capacity::workspace_root;
use xtask::tables;

#[test]
fn the_capacity_page_tables_agree_with_the_committed_reports() {
    if let Err(problem) = tables::run(&workspace_root(), true) {
        panic!("{problem}");
    }
}
