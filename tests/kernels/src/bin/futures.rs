//! Futures under QEMU: a chain that visits every core in turn (each step
//! checked to run where it was sent), 10,000 two-step chains across
//! neighbouring cores (summed), and one shared result waited for by 64
//! strands and chained on every core.
#![no_std]
#![no_main]

extern crate alloc;

#[path = "../../../common/future_cases.rs"]
mod future_cases;

use alloc::vec::Vec;
use roving::time::Instant;
use roving::{Pool, platform};
use roving_kernel::println;
use roving_test_kernels::{self as _, expected_cores, pass};

fn main() {
    let cores = platform::core_count();
    assert_eq!(cores, expected_cores());
    let pool = Pool::new().expect("a pool of every core");
    pool.run(|| {
        let (value, visited) = future_cases::chain_visits_every_core(cores);
        let expected: Vec<usize> = (1..=cores).map(|step| step % cores).collect();
        assert_eq!(visited, expected, "a step ran on another core than the one it was sent to");
        assert_eq!(value, 3u64.pow(cores as u32 - 1), "chain checksum");
        let started = Instant::now();
        let sum = future_cases::many_chains(cores, 10_000);
        assert_eq!(sum, 2 * (0..10_000u64).sum::<u64>(), "chains checksum");
        let took = started.elapsed();
        assert_eq!(future_cases::shared_by_many(cores, 64), 21 * (64 + cores as u64), "shared checksum");
        println!(
            "futures: a chain through all {cores} cores; 10000 chains in {} ms; a shared result seen by 64 strands and {cores} continuations",
            took.as_millis()
        );
    })
    .expect("the pool runs");
    pass("futures");
}

roving_kernel::entry!(main);
