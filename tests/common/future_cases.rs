//! Future chains shared by the host tests (`tests/future.rs`) and the QEMU
//! kernel `futures`. Only `core`, `alloc` and roving: it builds for bare
//! metal. Run from a strand of a pool of at least `cores` cores.
#![allow(dead_code)]

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;
use roving::{Pool, platform, strand};

fn here() -> usize {
    platform::current_core().expect("a core of the pool")
}

/// A value passed along a chain that visits every core in turn, each step
/// recording where it ran. Returns the value and the cores visited.
pub fn chain_visits_every_core(cores: usize) -> (u64, Vec<usize>) {
    let pool = Pool::current().expect("run from the pool");
    let mut future = pool.future_on(1 % cores, || (1u64, vec![here()])).expect("core 1 is in the pool");
    for step in 2..=cores {
        future = future.then(step % cores, |(n, mut visited)| {
            visited.push(here());
            (n * 3, visited)
        });
    }
    future.wait().expect("main is a strand")
}

/// `chains` chains of two steps on neighbouring cores: `i` sent to core
/// `i % cores`, doubled on the next core. Returns the sum.
pub fn many_chains(cores: usize, chains: u64) -> u64 {
    let pool = Pool::current().expect("run from the pool");
    let futures: Vec<_> = (0..chains)
        .map(|i| {
            let core = (i % cores as u64) as usize;
            pool.future_on(core, move || i).expect("a core of the pool").then((core + 1) % cores, |i| i * 2)
        })
        .collect();
    futures.into_iter().map(|f| f.wait().expect("main is a strand")).sum()
}

/// One shared result, waited for by `strands` strands and chained on every
/// core; returns the sum of what they all saw (each sees 21).
pub fn shared_by_many(cores: usize, strands: usize) -> u64 {
    let pool = Pool::current().expect("run from the pool");
    let shared = pool.future_on(cores - 1, || 21u64).expect("the last core is in the pool").shared();
    let waiters: Vec<_> = (0..strands)
        .map(|_| {
            let shared = shared.clone();
            strand::spawn(move || *shared.wait().expect("a strand may wait")).expect("a fibre")
        })
        .collect();
    let chained: Vec<_> = (0..cores).map(|core| shared.then(core, |n| *n)).collect();
    let seen: u64 = waiters.into_iter().map(|w| w.join().expect("main is a strand")).sum();
    seen + chained.into_iter().map(|f| f.wait().expect("main is a strand")).sum::<u64>()
}
