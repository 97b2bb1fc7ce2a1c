//! Fork-join on bare metal (the cases are in `tests/common/join_cases.rs`,
//! shared with the host tests): a parallel sum of 10^8 elements and
//! fib(32) with `join` give the right answers, and with more than one
//! core the sum's leaves ran on more than one core. A strand that panics
//! in `a` (not unwound here) fails only once its `b`, perhaps running on
//! another core, has ended; with 3 cores or more, a strand whose halves
//! both fail (its `b` run by another strand) counts `b`'s failure.
#![no_std]
#![no_main]

#[path = "../../../common/join_cases.rs"]
mod join_cases;

use join_cases::*;
use roving::time::Instant;
use roving::{Pool, platform};
use roving_kernel::println;
use roving_test_kernels::{self as _, expected_cores, pass};

fn main() {
    let cores = platform::core_count();
    assert_eq!(cores, expected_cores());
    let pool = Pool::new().expect("a pool");
    let started = Instant::now();
    let (sum, spread) =
        pool.run(|| (parallel_sum(0, ELEMENTS, 100_000), leaf_cores())).expect("the pool runs");
    assert_eq!(sum, SUM);
    assert!(spread >= cores.min(2) as u32, "only {spread} of {cores} cores ran leaves");
    println!(
        "sum: 10^8 elements = {sum} in {} ms; leaves ran on {spread} cores",
        started.elapsed().as_millis()
    );
    let started = Instant::now();
    let fib32 = Pool::new().expect("a pool").run(|| fib(32, 4)).expect("the pool runs");
    assert_eq!(fib32, FIB_32);
    println!("fib: fib(32) = {fib32} in {} ms", started.elapsed().as_millis());
    let failure = Pool::new().expect("a pool").run(a_fails_inside_a_join).expect("the pool runs");
    assert_eq!(failure.message(), "a failed inside a join");
    println!("failure: a strand that panicked inside a join failed once b had ended; the pool ran on");
    if cores >= 3 {
        let failure =
            Pool::new().expect("a pool").run(both_halves_fail_inside_a_join).expect("the pool runs");
        assert_eq!(failure.message(), "a failed, and so did b");
        assert_eq!(failure.others(), 1, "b's failure (in the strand that ran it) was not counted");
        println!("failure: both halves failed; the strand's failure counts b's");
    }
    pass("join");
}

roving_kernel::entry!(main);
