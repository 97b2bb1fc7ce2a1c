//! The strand tree on the host: cancellation of a whole subtree, failures
//! travelling up through joins, scopes, shields, and the bad inputs.
#![cfg(feature = "std")]

extern crate alloc;

mod support;
#[path = "common/tree_cases.rs"]
mod tree_cases;

use roving::RunError;
use roving::strand::{self, CancelError, ScopeError, WaitError};
use std::time::{Duration, Instant};
use support::run_pool;

#[test]
fn a_leaf_panic_travels_through_two_joins_to_the_root_as_the_original_failure() {
    let outcome = run_pool(4, |_| tree_cases::leaf_panic_through_two_joins());
    tree_cases::check_leaf_failure(outcome, "tree_cases.rs");
}

#[test]
fn a_strand_that_fails_holding_mutexes_poisons_and_releases_them() {
    tree_cases::check_poisoned(run_pool(4, |_| tree_cases::poisoned_by_a_failed_holder()).unwrap());
}

#[test]
fn a_failure_nobody_joins_cancels_its_parent_and_stops_the_pool() {
    let outcome = run_pool(2, |_| {
        drop(strand::spawn(|| panic!("detached and failed")).unwrap());
        // The failure comes up to us and cancels us.
        assert_eq!(strand::sleep(Duration::from_secs(60)), Err(WaitError::Interrupted));
        7
    });
    match outcome {
        Err(RunError::Failed(failure)) => assert_eq!(failure.message(), "detached and failed"),
        other => panic!("expected the detached failure at the root, got {other:?}"),
    }
}

#[test]
fn a_scope_that_returns_with_a_live_child_cancels_it_and_says_so() {
    tree_cases::check_scope_returning_early(run_pool(2, |_| tree_cases::scope_returning_early()).unwrap());
}

#[test]
fn scoped_strands_borrow_the_callers_stack_and_the_scope_returns_their_work() {
    let (sum, data) = run_pool(4, |_| {
        let mut data = vec![1u64; 1000];
        let sum = strand::scope(|s| {
            let handles: Vec<_> = data
                .chunks_mut(100)
                .map(|chunk| {
                    s.spawn(move || {
                        strand::yield_now().unwrap();
                        chunk.iter_mut().for_each(|v| *v *= 2);
                        chunk.iter().sum::<u64>()
                    })
                    .unwrap()
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
        })
        .unwrap();
        (sum, data)
    })
    .unwrap();
    assert_eq!(sum, 2000);
    assert!(data.iter().all(|&v| v == 2));
}

#[test]
fn a_shield_holds_off_cancellation_for_cleanup() {
    let outcome = run_pool(2, |_| {
        let child = strand::spawn(|| {
            let first = strand::sleep(Duration::from_secs(60));
            let _shield = strand::shield();
            let started = Instant::now();
            let cleanup = strand::sleep(Duration::from_millis(20));
            (first, cleanup, started.elapsed(), strand::checkpoint())
        })
        .unwrap();
        strand::sleep(Duration::from_millis(5)).unwrap();
        child.cancel().unwrap();
        let outcome = child.join().unwrap();
        (outcome, strand::checkpoint())
    })
    .unwrap();
    let ((first, cleanup, took, checkpoint_in_child), checkpoint_in_root) = outcome;
    assert_eq!(first, Err(WaitError::Interrupted));
    assert_eq!(cleanup, Ok(()), "a shielded sleep is not interrupted");
    assert!(took >= Duration::from_millis(20));
    assert_eq!(checkpoint_in_child, Ok(()), "a shielded checkpoint passes");
    assert_eq!(checkpoint_in_root, Ok(()), "cancelling a child does not cancel its parent");
}

#[test]
fn bad_inputs_are_typed_errors() {
    run_pool(2, |_| {
        let done = strand::spawn(|| 1).unwrap();
        while !done.is_finished() {
            strand::yield_now().unwrap();
        }
        let id = done.id();
        assert_eq!(done.cancel(), Err(CancelError::Finished { strand: id }));
        assert_eq!(done.join().unwrap(), 1);
    })
    .unwrap();
    // Outside strands a scope cannot wait for its children: the body comes back.
    let outside = strand::scope(|_| 1);
    assert!(matches!(outside, Err(ScopeError::NotAStrand(_))));
}
