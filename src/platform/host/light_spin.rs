//! How long the host's light tier watches a core's doorbell before it
//! parks the core's thread.
//!
//! Spinning costs CPU while it waits; parking costs a futex wake-up and a
//! trip through the OS scheduler when the wake comes. Spinning for as long
//! as a park and unpark pair costs, then parking, never costs more than
//! twice what the better of the two would have for that wait, whatever
//! the wait turns out to be (the classic rule for spin-then-block locks).
//! So the spin is that pair's cost, measured once per process on the host
//! it runs on: two threads wake each other through `park` and `unpark`.
//!
//! The deep tier parks at once, and so does the light tier of a machine
//! with more cores than the host has hardware threads.

use crate::atomics::unmodelled::{AtomicU32, Ordering::*};
use std::sync::Arc;
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

/// Round trips timed (each is two park and unpark pairs).
const TRIPS: u32 = 32;

/// Bounds on the measured spin: a pair never costs less than a
/// microsecond, and a host so loaded that it seems to cost more than
/// 50 µs is better off parking its idle cores sooner.
const SHORTEST: Duration = Duration::from_micros(1);
const LONGEST: Duration = Duration::from_micros(50);

/// The light tier's spin on this host (module docs); measured on first use.
pub(super) fn light_spin() -> Duration {
    static SPIN: OnceLock<Duration> = OnceLock::new();
    *SPIN.get_or_init(|| park_unpark_pair().clamp(SHORTEST, LONGEST))
}

/// The median cost of one park and unpark pair, over [`TRIPS`] round
/// trips between this thread and a helper.
fn park_unpark_pair() -> Duration {
    let turn = Arc::new(AtomicU32::new(0));
    let me = thread::current();
    let helper = {
        let turn = turn.clone();
        thread::spawn(move || {
            for trip in 0..TRIPS {
                while turn.load(Acquire) != 2 * trip + 1 {
                    thread::park();
                }
                turn.store(2 * trip + 2, Release);
                me.unpark();
            }
        })
    };
    let mut trips: Vec<Duration> = (0..TRIPS)
        .map(|trip| {
            let start = Instant::now();
            turn.store(2 * trip + 1, Release);
            helper.thread().unpark();
            while turn.load(Acquire) != 2 * trip + 2 {
                thread::park();
            }
            start.elapsed()
        })
        .collect();
    helper.join().expect("the helper thread of the spin measurement");
    trips.sort_unstable();
    trips[trips.len() / 2] / 2
}
