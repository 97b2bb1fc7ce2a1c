//! Fork-join on the host: right answers on 1, 2, 4 and 8 cores, work
//! spread over cores, panics passed on from either half, and `join` from
//! plain tasks and outside pools.
#![cfg(feature = "std")]

#[path = "common/join_cases.rs"]
mod join_cases;
mod support;

use join_cases::*;
use roving::strand;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use support::run_pool;

#[test]
fn a_parallel_sum_of_a_hundred_million_elements_is_right_on_1_2_4_and_8_cores() {
    for cores in [1, 2, 4, 8] {
        let (sum, spread) = run_pool(cores, |_| (parallel_sum(0, ELEMENTS, 10_000), leaf_cores())).unwrap();
        assert_eq!(sum, SUM, "{cores} cores");
        assert!(spread >= cores.min(2) as u32, "{cores} cores, but only {spread} ran leaves");
    }
}

#[test]
fn fib_32_with_a_join_at_every_level_is_right_on_1_2_4_and_8_cores() {
    for cores in [1, 2, 4, 8] {
        assert_eq!(run_pool(cores, |_| fib(32, 1)).unwrap(), FIB_32, "{cores} cores");
    }
}

#[test]
fn join_outside_a_pool_runs_both_halves_in_order() {
    let order = AtomicUsize::new(0);
    let (a, b) = roving::join(|| order.fetch_add(1, SeqCst), || order.fetch_add(1, SeqCst));
    assert_eq!((a, b), (0, 1));
}

#[test]
fn join_works_from_plain_tasks_as_well_as_strands() {
    let sum = run_pool(4, |_| {
        let (tx, rx) = roving::sync::channel::bounded(4).unwrap();
        for part in 0..4u64 {
            let tx = tx.clone();
            roving::spawn_task(move || {
                tx.try_send(parallel_sum(part * 1_000_000, (part + 1) * 1_000_000, 1000)).unwrap()
            })
            .unwrap();
        }
        (0..4).map(|_| rx.recv().unwrap()).sum::<u64>()
    })
    .unwrap();
    assert_eq!(sum, 499_500 * 4000);
}

/// Joins many times with `b` panicking at one leaf; returns the message.
fn panic_in(which: &'static str) -> String {
    fn walk(depth: u32, which: &'static str) -> u64 {
        if depth == 0 {
            return 1;
        }
        let (a, b) = roving::join(
            || {
                if depth == 1 && which == "a" {
                    panic!("a failed at the bottom");
                }
                walk(depth - 1, which)
            },
            || {
                if depth == 1 && which == "b" {
                    panic!("b failed at the bottom");
                }
                walk(depth - 1, which)
            },
        );
        a + b
    }
    run_pool(4, move |_| {
        let caught = std::panic::catch_unwind(|| walk(12, which)).expect_err("a half panicked");
        assert!(strand::current().is_some(), "the strand goes on after catching it");
        caught.downcast_ref::<&str>().map(|s| s.to_string()).unwrap_or_default()
    })
    .unwrap()
}

#[test]
fn a_panic_in_either_half_comes_out_of_join_after_the_other_half_settled() {
    assert_eq!(panic_in("a"), "a failed at the bottom");
    assert_eq!(panic_in("b"), "b failed at the bottom");
}

#[test]
fn a_strand_whose_a_panics_inside_a_join_fails_only_after_b_ended() {
    let failure = run_pool(4, |_| a_fails_inside_a_join()).unwrap();
    assert_eq!(failure.message(), "a failed inside a join");
}

#[test]
fn both_halves_failing_with_another_strand_running_b_counts_both() {
    let failure = run_pool(4, |_| both_halves_fail_inside_a_join()).unwrap();
    assert_eq!(failure.message(), "a failed, and so did b");
    assert_eq!(failure.others(), 1, "b's failure was lost");
}

/// Both halves of a join fail: the strand's failure is `a`'s, and it
/// counts `b`'s in `others` instead of losing it.
#[test]
fn when_both_halves_fail_the_failure_counts_the_other() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};
    let error = run_pool(2, |_| {
        let b_started = Arc::new(AtomicBool::new(false));
        let seen = b_started.clone();
        let child = strand::spawn(move || {
            // Let the root block, so the other core is idle when the join
            // offers `b`.
            strand::sleep(Duration::from_millis(20)).unwrap();
            roving::join(
                move || {
                    // Wake the other core (a task for it), which takes `b`
                    // when it searches; fail only once it has.
                    let here = roving::platform::current_core().unwrap();
                    let _ = roving::post(1 - here, || ());
                    let start = Instant::now();
                    while !seen.load(SeqCst) && start.elapsed() < Duration::from_secs(5) {
                        std::hint::spin_loop();
                    }
                    panic!("a failed on purpose")
                },
                move || {
                    b_started.store(true, SeqCst);
                    panic!("b failed on purpose")
                },
            )
        })
        .unwrap();
        child.join().unwrap_err()
    })
    .unwrap();
    let strand::JoinError::Failed(failure) = error else { panic!("not a failure: {error:?}") };
    assert_eq!(failure.message(), "a failed on purpose");
    assert_eq!(failure.others(), 1, "b's failure is counted: {failure}");
}
