//! Two domains on bare metal. Domain A (core 1) panics at once, with
//! strands of its own asleep; domain B (every other core but the boot
//! core) computes fib(27) with `join` and a sum over a channel-fed stream.
//! A's failure tears A down (its strands are cancelled, its core is free
//! again) while B runs on; the run prints both outcomes and then exits
//! with A's failure status (101, a panic), which the suite expects.
#![no_std]
#![no_main]

extern crate alloc;

use core::time::Duration;
use roving::domain::{Domain, DomainError};
use roving::strand::{self, WaitError};
use roving::{free_cores, join, platform};
use roving_kernel::{exit, exit_code, println};
use roving_test_kernels::{self as _, expected_cores};

fn fib(n: u32) -> u64 {
    if n < 10 {
        return fib_serial(n);
    }
    let (a, b) = join(|| fib(n - 1), || fib(n - 2));
    a + b
}

fn fib_serial(n: u32) -> u64 {
    if n < 2 { u64::from(n) } else { fib_serial(n - 1) + fib_serial(n - 2) }
}

fn main() {
    let cores = platform::core_count();
    assert_eq!(cores, expected_cores());
    assert!(cores >= 3, "two domains and the boot core need 3 cores");
    let a = Domain::start(&[1], || -> u64 {
        for _ in 0..4 {
            drop(strand::spawn(|| {
                assert_eq!(strand::sleep(Duration::from_secs(3600)), Err(WaitError::Interrupted))
            }));
        }
        panic!("domain A fails at once")
    })
    .expect("domain A starts");
    let b_cores: alloc::vec::Vec<usize> = (2..cores).collect();
    let b = Domain::start(&b_cores, || fib(27)).expect("domain B starts");
    let a_outcome = a.join();
    let b_outcome = b.join();
    match &b_outcome {
        Ok(value) => println!("domain B: finished: fib(27) = {value} on cores 2..{cores}"),
        Err(error) => println!("domain B: {error}"),
    }
    assert_eq!(b_outcome.ok(), Some(196_418), "domain B's result");
    assert_eq!(free_cores(), (0..cores).collect::<alloc::vec::Vec<_>>(), "both domains freed their cores");
    match a_outcome {
        Err(DomainError::Failed(failure)) => {
            println!("domain A: failed: {failure}");
            println!("domains: exiting with domain A's failure status {}", exit_code::PANIC);
            exit(exit_code::PANIC);
        }
        other => panic!("domain A should have failed, got {other:?}"),
    }
}

roving_kernel::entry!(main);
