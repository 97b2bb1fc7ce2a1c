//! Async tasks under QEMU: 10,000 tasks yielding three times each, spread
//! over the cores by stealing (summed, and more than one core must poll
//! them when there is more than one); wakes during a poll causing exactly
//! one more; a task pinned to each core woken from another; tasks woken
//! by tasks, awaiting tasks, cancelled while waiting, woken after they
//! ended; `block_on` in a strand and refused in a plain task; a task that
//! panics failing alone (its poll abandoned back to the core's loop). Then
//! strands and tasks on the same `sync` objects (a mutex, a semaphore, an
//! event, a channel with both kinds at each end), futures dropped after
//! they were handed a lock, a permit or a wake giving it back, tasks'
//! sleeps and timeouts on the timer heap, and `block_on` in strands far
//! more than the fibres (copied off them while their futures wait).
#![no_std]
#![no_main]

extern crate alloc;

#[path = "../../../common/async_cases.rs"]
mod async_cases;
#[path = "../../../common/sync_async_cases.rs"]
mod sync_async_cases;

use roving::time::Instant;
use roving::{Pool, platform};
use roving_kernel::println;
use roving_test_kernels::{self as _, expected_cores, pass};

fn main() {
    let cores = platform::core_count();
    assert_eq!(cores, expected_cores());
    let pool = Pool::new().expect("a pool of every core");
    pool.run(|| {
        let started = Instant::now();
        let (sum, polled_on) = async_cases::many_tasks(10_000, 3, 0);
        let took = started.elapsed();
        assert_eq!(sum, (0..10_000u64).sum::<u64>(), "tasks checksum");
        assert!(cores == 1 || polled_on > 1, "10,000 tasks were all polled on one core of {cores}");
        for wakes in [1, 5] {
            assert_eq!(
                async_cases::wakes_during_a_poll_poll_once_more(wakes),
                2,
                "polls after {wakes} wakes"
            );
        }
        for core in 0..cores {
            assert_eq!(async_cases::pinned_task_stays(core), core, "a task pinned to core {core}");
        }
        async_cases::woken_by_another_task();
        assert_eq!(async_cases::tasks_await_tasks(8), 360, "tasks awaiting tasks");
        assert!(async_cases::cancel_drops_the_future(), "a cancelled task kept its future");
        assert_eq!(async_cases::late_wakes_are_harmless(100), 100);
        assert_eq!(async_cases::block_on_in_a_strand(), 42);
        assert_eq!(async_cases::block_on_outside_a_strand(), Err(roving::strand::WaitError::NotAStrand));
        assert_eq!(async_cases::a_panicking_task_fails_alone(), 4950, "tasks after a task's panic");
        assert_eq!(async_cases::panics_in_polls_and_drops_fail_each_task(), 6, "six tasks' panics");
        println!(
            "tasks: 10000 tasks yielding 3 times each in {} ms, polled on {polled_on} of {cores} cores",
            took.as_millis()
        );
        shared_objects();
    })
    .expect("the pool runs");
    pass("tasks");
}

/// Strands and tasks on one object of each kind, and tasks' timers.
fn shared_objects() {
    assert_eq!(sync_async_cases::strands_and_tasks_share_a_mutex(4, 100), 800, "mutex count");
    let (most, turns) = sync_async_cases::strands_and_tasks_share_a_semaphore(2, 4, 50);
    assert!(most <= 2, "{most} permits held at once, of 2");
    assert_eq!(turns, 400, "semaphore turns");
    assert_eq!(sync_async_cases::strands_and_tasks_wait_on_one_event(20), 40, "event waiters");
    let sum = sync_async_cases::strands_and_tasks_share_a_channel(3, 500);
    assert_eq!(sum, 2 * 3 * (0..500u64).sum::<u64>(), "channel sum");
    sync_async_cases::dropped_waits_give_back_what_they_were_handed();
    sync_async_cases::cancelled_waits_leave_their_objects_usable();
    let (early, late) = sync_async_cases::tasks_sleep(50);
    assert_eq!(early, 0, "task sleeps ended early");
    let took = sync_async_cases::timeouts();
    assert!(took < core::time::Duration::from_secs(10), "a wait that ended first took {took:?}");
    assert!(sync_async_cases::block_on_sleeps() >= core::time::Duration::from_millis(6));
    assert_eq!(sync_async_cases::block_on_with_copy_swap(500), 500, "block_on with copy-swap");
    println!(
        "tasks: strands and tasks shared a mutex, a semaphore, an event and a channel; 50 task sleeps, none early, the latest {late} ms late"
    );
}

roving_kernel::entry!(main);
