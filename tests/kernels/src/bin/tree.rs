//! The strand tree on bare metal, where a panic cannot unwind (the cases
//! are in `tests/common/tree_cases.rs`, shared with the host tests):
//!
//! 1. a leaf panics; its failure travels through two joins to the root and
//!    comes out of `Pool::run` as the original failure, while the core that
//!    ran the leaf goes on running work;
//! 2. a 3-level tree of 1,011 strands blocked in sleeps, channels, mutexes
//!    and joins is cancelled from its top; all of it ends, and fibres,
//!    saved stacks and live strands are back where they started;
//! 3. a scope that returns while its strand sleeps cancels it and reports
//!    `ReturnWithLiveStrands`;
//! 4. a strand that panics holding two mutexes leaves them poisoned and
//!    unlocked (it is abandoned, not unwound: its list of held locks is
//!    what releases them), and a strand waiting for one hears `Poisoned`;
//!    its fibre, and that of a second failed strand, are quarantined.
#![no_std]
#![no_main]

extern crate alloc;

#[path = "../../../common/tree_cases.rs"]
mod tree_cases;

use core::sync::atomic::Ordering::SeqCst;
use core::time::Duration;
use roving::time::Instant;
use roving::{Pool, platform, strand};
use roving_kernel::println;
use roving_test_kernels::{self as _, expected_cores, pass};
use tree_cases::*;

fn main() {
    assert_eq!(platform::core_count(), expected_cores());
    let outcome = Pool::new().expect("a pool").run(leaf_panic_through_two_joins);
    let failure = check_leaf_failure(outcome, "tree_cases.rs");
    println!("failure: reached the root as \"{failure}\"; core {} ran on", LEAF_CORE.load(SeqCst));
    let pool = Pool::new().expect("a pool");
    let took = pool.run(|| cancel_a_tree(&pool)).expect("the pool runs");
    println!("cancel: a tree of {TREE} blocked strands ended {} us after the cancel", took.as_micros());
    check_scope_returning_early(
        Pool::new().expect("a pool").run(scope_returning_early).expect("the pool runs"),
    );
    println!("scope: returning with a live strand cancelled it and failed the scope");
    let before = strand::usage().fibres_quarantined;
    check_poisoned(Pool::new().expect("a pool").run(poisoned_by_a_failed_holder).expect("the pool runs"));
    println!("poison: a strand that failed holding two mutexes released and poisoned both");
    // Both failed strands had a fibre to themselves: each is quarantined
    // as its core puts it back, which can come just after `run` returns.
    let deadline = Instant::now() + Duration::from_secs(1);
    while strand::usage().fibres_quarantined < before + 2 && Instant::now() < deadline {
        core::hint::spin_loop();
    }
    let quarantined = strand::usage().fibres_quarantined - before;
    assert_eq!(quarantined, 2, "the two failed strands' fibres were not quarantined");
    println!("quarantine: the two failed strands' fibres are kept, never handed out again");
    pass("tree");
}

roving_kernel::entry!(main);
