//! Bursts of closures and strands made on one core, for the spreading
//! tests (`tests/spreading.rs`; the async tasks' burst is
//! `async_cases::many_tasks`). Each returns how many distinct cores ran a
//! part of it: a burst should reach the pool's idle cores whichever
//! mailboxes the pool has. Only `core`, `alloc` and roving. Run from a
//! strand of a pool; the including crate also includes `async_cases`.
#![allow(dead_code)]

extern crate alloc;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use roving::strand;
use roving::sync::Event;

use super::async_cases::Seen;

/// `count` closures spawned with `spawn_task`, each a part of a burst of
/// [`Seen`] with `spin`; waits until all have run.
pub fn closures(count: usize, spin: u32) -> usize {
    let seen = Seen::new(spin);
    let left = Arc::new(AtomicUsize::new(count));
    let done = Arc::new(Event::new());
    for _ in 0..count {
        let (seen, left, done) = (seen.clone(), left.clone(), done.clone());
        roving::spawn_task(move || {
            seen.part();
            if left.fetch_sub(1, SeqCst) == 1 {
                done.set();
            }
        })
        .expect("a running pool takes closures");
    }
    done.wait().expect("the root strand waits for the burst");
    seen.count()
}

/// `count` strands, each doing a part of a burst of [`Seen`] with `spin`
/// then yielding, `yields` times over; joined from this strand.
pub fn strands(count: usize, yields: usize, spin: u32) -> usize {
    let seen = Seen::new(spin);
    let strands: Vec<_> = (0..count)
        .map(|_| {
            let seen = seen.clone();
            strand::spawn(move || {
                for _ in 0..=yields {
                    seen.part();
                    strand::yield_now().expect("a strand may yield");
                }
            })
            .unwrap_or_else(|_| panic!("a running pool takes strands"))
        })
        .collect();
    for strand in strands {
        strand.join().expect("the strand finishes");
    }
    seen.count()
}
