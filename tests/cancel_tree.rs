//! Cancelling a 3-level tree of a thousand blocked strands from its top
//! (`tests/common/tree_cases.rs`, shared with the QEMU kernel `tree`).
//! Alone in its test binary: it checks the fibres and saved stacks, which
//! are shared by every pool in the process.
#![cfg(feature = "std")]

extern crate alloc;

mod support;
#[path = "common/tree_cases.rs"]
mod tree_cases;

#[test]
fn cancelling_a_three_level_tree_of_a_thousand_blocked_strands_ends_all_of_them() {
    let took = support::run_pool(4, tree_cases::cancel_a_tree).unwrap();
    assert!(took < std::time::Duration::from_secs(10), "the tree took {took:?} to end");
    println!(
        "cancelled a tree of {} blocked strands: all ended {} µs after the cancel",
        tree_cases::TREE,
        took.as_micros()
    );
}
