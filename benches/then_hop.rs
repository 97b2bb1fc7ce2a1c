//! The latency of a future's `.then` hop between cores: a chain of
//! continuations alternating between cores 0 and 1, each posted when the
//! one before has its result.

use crate::harness::on_roving;
use roving::Pool;
use std::time::{Duration, Instant};

/// `hops` continuations, each on the other core from the one before.
pub fn roving_then(hops: u64) -> Duration {
    let (elapsed, value) = on_roving(2, move || {
        let pool = Pool::current().expect("the root strand runs on the pool");
        let start = Instant::now();
        let mut future = pool.future_on(1, || 0u64).expect("core 1 is in the pool");
        for hop in 0..hops {
            future = future.then((hop % 2) as usize, |n| n + 1);
        }
        let value = future.wait().expect("the root is a strand");
        (start.elapsed(), value)
    });
    assert_eq!(value, hops);
    elapsed
}
