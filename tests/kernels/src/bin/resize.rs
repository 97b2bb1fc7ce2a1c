//! Resizing a running pool on bare metal (the case is in
//! `tests/common/resize_cases.rs`, shared with the host tests): a pool of
//! every core shrinks to 1 core and grows to 3 while 100,000 tasks and
//! 1,000 strands flow through it; every one runs exactly once. Cores that
//! leave go back to the platform (their entry returns) and are started
//! again when the pool grows. Then a pool of the free cores is started
//! from the root of a pool of core 0, runs strands, and is destroyed with
//! strands asleep in it; its cores are free again.
#![no_std]
#![no_main]

extern crate alloc;

#[path = "../../../common/resize_cases.rs"]
mod resize_cases;

use roving::time::Instant;
use roving::{Config, Pool, platform};
use roving_kernel::println;
use roving_test_kernels::{self as _, expected_cores, pass};

fn main() {
    let cores = platform::core_count();
    assert_eq!(cores, expected_cores());
    let pool = roving_test_kernels::every_core_pool();
    let started = Instant::now();
    let outcome = pool.run(|| resize_cases::resize_under_load(&pool)).expect("the pool runs");
    resize_cases::check(&outcome, cores);
    println!(
        "resize: {} tasks and {} strands, pool sizes {:?}, in {} ms; {} posts to cores outside the pool came back and were spawned",
        resize_cases::TASKS,
        resize_cases::STRANDS,
        outcome.sizes,
        started.elapsed().as_millis(),
        outcome.refused
    );
    if cores > 1 {
        let home = Pool::with_config(Config::new().cores(1)).expect("a pool of core 0");
        let (ran_on, free) = home.run(|| resize_cases::start_and_destroy(cores)).expect("the home pool runs");
        assert!(!ran_on[0], "the started pool's strands ran on core 0");
        assert_eq!(free, (1..cores).collect::<alloc::vec::Vec<_>>(), "the destroyed pool's cores are free");
        println!(
            "start/destroy: a pool of cores 1..{cores} ran strands on {} of them and was destroyed with {} strands asleep",
            ran_on.iter().filter(|&&ran| ran).count(),
            2 * (cores - 1)
        );
    }
    pass("resize");
}

roving_kernel::entry!(main);
