//! Copy-swap: switching between strands that share one fibre, against the
//! same switches between strands on fibres of their own plus a copy of the
//! same bytes out and back.
//!
//! Both run on a one-core pool with every fibre but the root's in use, so
//! the core goes round all of them, one strand per turn. Each strand keeps
//! `BYTES` of its own data on its stack and checks them when it ends.

use roving::strand::{self, sizes::FIBRES};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Two strands on each fibre: every turn of a fibre saves the stack of the
/// strand that ran last and restores the other's.
pub fn shared_fibres<const BYTES: usize>(switches: u64) -> Duration {
    let strands = 2 * (FIBRES as u64 - 1);
    run(switches, strands, |seed, yields| {
        Box::new(move || {
            let mut kept = [0u8; BYTES];
            fill(&mut kept, seed);
            for _ in 0..yields {
                black_box(&mut kept);
                strand::yield_now().expect("a strand may yield");
            }
            check(black_box(&kept), seed);
        })
    })
}

/// One strand on each fibre, so no stack is saved; instead each copies
/// its `BYTES` to a buffer of its own before it yields and back after, as
/// a copy-swap does for it.
pub fn own_fibres_plus_memcpy<const BYTES: usize>(switches: u64) -> Duration {
    let strands = FIBRES as u64 - 1;
    run(switches, strands, |seed, yields| {
        // Two halves, used in turn, so the buffers cover as many bytes as
        // the save areas of twice as many strands sharing fibres.
        let mut save = vec![0u8; 2 * BYTES].into_boxed_slice();
        Box::new(move || {
            let mut kept = [0u8; BYTES];
            fill(&mut kept, seed);
            for turn in 0..yields {
                let half = &mut save[(turn as usize % 2) * BYTES..][..BYTES];
                half.copy_from_slice(black_box(&kept));
                strand::yield_now().expect("a strand may yield");
                kept.copy_from_slice(black_box(half));
            }
            check(black_box(&kept), seed);
        })
    })
}

type Body = Box<dyn FnOnce() + Send>;

/// Spawns `strands` strands made by `body(seed, yields)` on a one-core
/// pool, then times them from when the root strand waits for them until
/// the last has ended; scaled to `switches` switches.
fn run(switches: u64, strands: u64, body: impl Fn(u8, u64) -> Body + Send + 'static) -> Duration {
    let yields = (switches / strands).max(1);
    let elapsed = crate::harness::on_roving(1, move || {
        let handles: Vec<_> = (0..strands)
            .map(|i| {
                strand::spawn(body(i as u8, yields)).unwrap_or_else(|_| panic!("a place for strand {i}"))
            })
            .collect();
        let start = Instant::now();
        for handle in handles {
            handle.join().expect("the root strand may join");
        }
        start.elapsed()
    });
    elapsed.mul_f64(switches as f64 / (yields * strands) as f64)
}

/// Gives `kept` contents that depend on `seed` and on each byte's place.
fn fill(kept: &mut [u8], seed: u8) {
    for (place, byte) in kept.iter_mut().enumerate() {
        *byte = byte_at(seed, place);
    }
}

/// Panics unless `kept` still holds what [`fill`] put there.
fn check(kept: &[u8], seed: u8) {
    for (place, &byte) in kept.iter().enumerate() {
        assert_eq!(byte, byte_at(seed, place), "byte {place} of strand {seed}'s stack");
    }
}

fn byte_at(seed: u8, place: usize) -> u8 {
    seed.wrapping_add(place as u8).rotate_left(place as u32 % 8)
}
