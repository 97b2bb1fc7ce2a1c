//! The strand tree on the host: cancellation of a whole subtree, failures
//! travelling up through joins, scopes, shields, and the bad inputs.
#![cfg(feature = "std")]

mod support;

use roving::RunError;
use roving::strand::{self, CancelError, FailureKind, JoinError, ScopeError, WaitError};
use roving::sync::{Mutex, channel};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};
use support::run_pool;

#[test]
fn a_leaf_panic_travels_through_two_joins_to_the_root_as_the_original_failure() {
    let leaf_core = Arc::new(AtomicUsize::new(usize::MAX));
    let after_panic = Arc::new(AtomicUsize::new(0));
    let (core_seen, ran) = (leaf_core.clone(), after_panic.clone());
    let outcome = run_pool(4, move |_| {
        let middle = strand::spawn(move || {
            let noted = core_seen.clone();
            let leaf = strand::spawn(move || -> u32 {
                noted.store(roving::platform::current_core().unwrap(), SeqCst);
                panic!("leaf failed on purpose")
            })
            .unwrap();
            let failure = match leaf.join() {
                Err(JoinError::Failed(failure)) => failure,
                other => panic!("expected the leaf's failure, got {other:?}"),
            };
            // The core that ran the leaf still runs work.
            let core = core_seen.load(SeqCst);
            let worked = strand::spawn(move || {
                let (tx, rx) = channel::bounded(1).unwrap();
                roving::post(core, move || tx.try_send(roving::platform::current_core()).unwrap()).unwrap();
                rx.recv().unwrap()
            })
            .unwrap();
            assert_eq!(worked.join().unwrap(), Some(core));
            ran.fetch_add(1, SeqCst);
            strand::raise(failure)
        })
        .unwrap();
        match middle.join() {
            Err(JoinError::Failed(failure)) => strand::raise(failure),
            other => panic!("expected the middle's failure, got {other:?}"),
        }
    });
    let failure = match outcome {
        Err(RunError::Failed(failure)) => failure,
        other => panic!("expected a failed run, got {other:?}"),
    };
    assert_eq!(failure.kind(), FailureKind::Panicked);
    assert_eq!(failure.message(), "leaf failed on purpose");
    assert!(failure.location().is_some_and(|l| l.file.ends_with("tree.rs")), "{failure}");
    assert_eq!(after_panic.load(SeqCst), 1);
    assert_ne!(leaf_core.load(SeqCst), usize::MAX);
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
    let (error, child_saw) = run_pool(2, |_| {
        let saw = Arc::new(Mutex::new(None));
        let seen = saw.clone();
        let result = strand::scope(|s| {
            s.spawn(move || *seen.lock().unwrap() = Some(strand::sleep(Duration::from_secs(60)))).unwrap();
            strand::sleep(Duration::from_millis(5)).unwrap();
            "returned early"
        });
        let error = result.expect_err("returning with a live child is an error");
        (error.failure().cloned(), saw.lock().unwrap().take())
    })
    .unwrap();
    let failure = error.expect("a failure");
    assert_eq!(failure.kind(), FailureKind::ReturnWithLiveStrands { live: 1 });
    assert_eq!(child_saw, Some(Err(WaitError::Interrupted)), "the child was cancelled and has ended");
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
