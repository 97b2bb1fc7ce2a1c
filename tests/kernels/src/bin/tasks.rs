//! Async tasks under QEMU: 10,000 tasks yielding three times each, spread
//! over the cores by stealing (summed, and more than one core must poll
//! them when there is more than one); wakes during a poll causing exactly
//! one more; a task pinned to each core woken from another; tasks woken
//! by tasks, awaiting tasks, cancelled while waiting, woken after they
//! ended; `block_on` in a strand and refused in a plain task.
#![no_std]
#![no_main]

extern crate alloc;

#[path = "../../../common/async_cases.rs"]
mod async_cases;

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
        let (sum, polled_on) = async_cases::many_tasks(10_000, 3);
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
        println!(
            "tasks: 10000 tasks yielding 3 times each in {} ms, polled on {polled_on} of {cores} cores",
            took.as_millis()
        );
    })
    .expect("the pool runs");
    pass("tasks");
}

roving_kernel::entry!(main);
