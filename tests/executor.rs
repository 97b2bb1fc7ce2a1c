//! Async tasks on the host: spawned on a pool, stolen, woken from cores,
//! from threads outside the pool and from stand-in interrupt handlers;
//! joined from strands and awaited from tasks; cancelled, panicking, and
//! dropped by a stopping pool.
#![cfg(feature = "std")]

#[path = "common/async_cases.rs"]
mod async_cases;
mod support;

use roving::executor::{self, TaskError};
use roving::strand::{FailureKind, WaitError};
use roving::{PostError, RunError};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll, Waker};
use support::{on_pool, run_pool, with_outside};

#[test]
fn ten_thousand_tasks_spread_over_the_cores_and_all_finish() {
    // Each poll does 5 µs of work until a second core polls one: 200 ms
    // on one core, longer than an OS leaves a runnable thread off the CPU
    // even on an oversubscribed host (without it the burst may end before
    // the other threads first run; tests/spreading.rs).
    let steps = support::steps_taking(std::time::Duration::from_micros(5), async_cases::busy);
    let (sum, cores) = on_pool(4, move || async_cases::many_tasks(10_000, 3, steps));
    assert_eq!(sum, (0..10_000).sum::<u64>());
    assert!(cores > 1, "tasks ran on {cores} core(s) of 4: nothing was stolen");
}

#[test]
fn wakes_during_a_poll_cause_exactly_one_more_poll() {
    for wakes in [1, 2, 10] {
        assert_eq!(on_pool(2, move || async_cases::wakes_during_a_poll_poll_once_more(wakes)), 2);
    }
}

#[test]
fn a_pinned_task_is_polled_on_its_core_only() {
    for core in 0..4 {
        assert_eq!(on_pool(4, move || async_cases::pinned_task_stays(core)), core);
    }
}

#[test]
fn a_task_woken_by_another_task_finishes() {
    on_pool(4, async_cases::woken_by_another_task);
}

#[test]
fn cancelling_a_waiting_task_drops_its_future() {
    assert!(on_pool(2, async_cases::cancel_drops_the_future));
}

#[test]
fn tasks_await_the_handles_of_other_tasks() {
    assert_eq!(on_pool(4, || async_cases::tasks_await_tasks(8)), 360);
}

#[test]
fn waking_a_finished_task_is_harmless() {
    assert_eq!(on_pool(2, || async_cases::late_wakes_are_harmless(100)), 100);
}

#[test]
fn block_on_runs_futures_in_a_strand_and_refuses_plain_tasks() {
    assert_eq!(on_pool(2, async_cases::block_on_in_a_strand), 42);
    assert_eq!(on_pool(2, async_cases::block_on_outside_a_strand), Err(WaitError::NotAStrand));
}

#[test]
fn a_panicking_task_fails_alone_and_its_core_goes_on() {
    assert_eq!(on_pool(2, async_cases::a_panicking_task_fails_alone), 4950);
}

#[test]
fn panics_in_polls_and_drops_fail_each_task() {
    assert_eq!(on_pool(2, async_cases::panics_in_polls_and_drops_fail_each_task), 6);
}

#[test]
fn a_panicking_task_gives_its_failure_to_its_handle() {
    let error = on_pool(2, || {
        let task = executor::spawn_async(async {
            executor::yield_now().await;
            if true {
                panic!("the task gave up");
            }
        })
        .unwrap();
        task.join().unwrap_err()
    });
    let TaskError::Failed(failure) = error else { panic!("not a failure: {error:?}") };
    assert_eq!(failure.kind(), FailureKind::Panicked);
    assert_eq!(failure.message(), "the task gave up");
    assert!(failure.location().is_some_and(|l| l.file.ends_with("executor.rs")), "{failure:?}");
}

#[test]
fn a_detached_task_that_panics_fails_the_pool() {
    let result = run_pool(2, |_| {
        drop(executor::spawn_async(async { panic!("nobody joins me") }).unwrap());
    });
    match result {
        Err(RunError::Failed(failure)) => assert_eq!(failure.message(), "nobody joins me"),
        other => panic!("the pool did not fail: {other:?}"),
    }
}

#[test]
fn a_task_waiting_for_a_wake_keeps_the_pool_running_until_woken() {
    with_outside(2, |outside| {
        let (gate, open, slot, _) = async_cases::gate();
        let task = executor::spawn_async(gate).unwrap();
        while slot.lock().is_none() {
            roving::strand::yield_now().unwrap();
        }
        // A stand-in interrupt handler wakes it by reference: no
        // allocation, no lock the pool could hold.
        let thread = outside(Box::new(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            open.store(true, SeqCst);
            let waker = slot.lock().clone().unwrap();
            waker.wake_by_ref();
            std::mem::forget(waker);
        }));
        drop(task);
        thread.join();
    });
}

#[test]
fn a_task_nothing_can_wake_is_reported_as_a_deadlock_and_cancelled() {
    let dropped = Arc::new(AtomicBool::new(false));
    let flag = dropped.clone();
    let result = run_pool(2, move |_| {
        let (gate, _open, _slot, was_dropped) = async_cases::gate();
        drop(executor::spawn_async(gate).unwrap());
        std::thread::spawn(move || {
            while !was_dropped.load(SeqCst) {
                std::thread::yield_now();
            }
            flag.store(true, SeqCst);
        });
    });
    match result {
        Err(RunError::Failed(failure)) => {
            let report = failure.deadlock().expect("a deadlock report");
            assert_eq!(report.tasks, 1, "{report}");
        }
        other => panic!("the pool did not report the stuck task: {other:?}"),
    }
    while !dropped.load(SeqCst) {
        std::thread::yield_now();
    }
}

#[test]
fn a_stopping_pool_drops_waiting_tasks_and_counts_them() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let (handles, pool) = run_pool(2, |pool| {
        let mut slots = Vec::new();
        let handles: Vec<_> = (0..5)
            .map(|_| {
                let (gate, _open, slot, was_dropped) = async_cases::gate();
                slots.push(slot);
                let guard = OnDrop(was_dropped, dropped.clone());
                executor::spawn_async(async move {
                    let _guard = guard;
                    gate.await
                })
                .unwrap()
            })
            .collect();
        // Every task waits at its gate; then the pool stops under them.
        while slots.iter().any(|slot| slot.lock().is_none()) {
            roving::strand::yield_now().unwrap();
        }
        pool.shutdown();
        (handles, pool.clone())
    })
    .unwrap();
    let mut context = Context::from_waker(Waker::noop());
    for mut handle in handles {
        assert_eq!(Pin::new(&mut handle).poll(&mut context), Poll::Ready(Err(TaskError::Stopped)));
    }
    assert_eq!(dropped.load(SeqCst), 5);
    assert_eq!(pool.live_tasks(), 0);
    assert!(pool.stats().iter().map(|s| s.discarded).sum::<u64>() >= 5);
    // A stopped pool gives the future back.
    match pool.spawn_async(async { 7 }) {
        Err(PostError::Stopped(future)) => drop(future),
        other => panic!("a stopped pool took a task: {other:?}"),
    }
}

/// Counts a drop, and marks it.
struct OnDrop(Arc<AtomicBool>, Arc<AtomicUsize>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
        self.1.fetch_add(1, SeqCst);
    }
}

#[test]
fn spawning_outside_a_pool_gives_the_future_back() {
    match executor::spawn_async(async { 1 }) {
        Err(PostError::NotInPool(future)) => drop(future),
        other => panic!("spawned outside a pool: {other:?}"),
    }
}

#[test]
fn a_driver_task_takes_every_signal_a_stand_in_handler_raises() {
    const RAISES: u64 = 2_000;
    let taken = with_outside(2, |outside| {
        let ready = Arc::new(roving::sync::Signal::new());
        let raised = Arc::new(AtomicUsize::new(0));
        let (signal, count) = (ready.clone(), raised.clone());
        let driver = executor::spawn_async(async move {
            let mut taken = 0;
            while taken < RAISES {
                signal.wait_async().await.unwrap();
                taken += 1;
                // Each raise waits for the one before to be taken, so none
                // coalesce: the handler below raises only then.
                count.store(taken as usize, SeqCst);
            }
            taken
        })
        .unwrap();
        let device = outside(Box::new(move || {
            for n in 0..RAISES as usize {
                while raised.load(SeqCst) < n {
                    std::thread::yield_now();
                }
                ready.signal();
            }
        }));
        let taken = driver.join().unwrap();
        device.join();
        taken
    });
    assert_eq!(taken, 2_000);
}

#[test]
fn a_signal_given_to_a_dropped_wait_is_raised_again() {
    on_pool(2, || {
        let signal = roving::sync::Signal::new();
        let mut context = Context::from_waker(Waker::noop());
        {
            let mut wait = std::pin::pin!(signal.wait_async());
            assert!(wait.as_mut().poll(&mut context).is_pending());
            // A second waiter is refused while the first waits.
            let mut second = std::pin::pin!(signal.wait_async());
            assert_eq!(
                second.as_mut().poll(&mut context),
                Poll::Ready(Err(roving::sync::WaitError::Occupied))
            );
            signal.signal();
            // Delivered to the first, which is dropped without looking.
        }
        assert!(signal.try_take(), "the delivered signal was lost with its wait");
        // A wait that has not registered yet takes a raised signal at once.
        signal.signal();
        assert_eq!(roving::block_on(signal.wait_async()).unwrap(), Ok(()));
    });
}

#[test]
fn polling_a_handle_after_it_gave_its_output_panics_with_a_message() {
    let message = on_pool(2, || {
        let mut handle = executor::spawn_async(async { 7 }).unwrap();
        let mut context = Context::from_waker(Waker::noop());
        let output = loop {
            if let Poll::Ready(output) = Pin::new(&mut handle).poll(&mut context) {
                break output;
            }
            roving::strand::yield_now().unwrap();
        };
        assert_eq!(output, Ok(7));
        let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = Pin::new(&mut handle).poll(&mut context);
        }))
        .unwrap_err();
        again
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| again.downcast_ref::<&str>().map(|s| s.to_string()))
    });
    assert!(message.unwrap_or_default().contains("polled after it returned its output"));
}
