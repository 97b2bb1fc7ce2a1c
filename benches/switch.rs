//! Switching between two execution contexts on one thread: roving's
//! strands, roving's bare context switch, and corosensei's coroutines.

use roving::raw::context::{self, Context};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// roving: one strand on a one-core pool yields `yields` times; each yield
/// switches to the core's scheduler, which finds the strand's fibre in its
/// queue and switches back.
pub fn strand_yield(yields: u64) -> Duration {
    crate::harness::on_roving(1, move || {
        let yielder = roving::strand::spawn(move || {
            let start = Instant::now();
            for _ in 0..yields {
                roving::strand::yield_now().expect("a strand may yield");
            }
            start.elapsed()
        })
        .expect("a fibre for the strand");
        yielder.join().expect("the root strand may join")
    })
}

/// roving: two strands on a one-core pool yield to each other, `yields`
/// times each; a round trip is one yield of each (two switches through
/// the core's scheduler), as a coroutine's resume + suspend is two
/// switches.
pub fn strand_pair_yield(yields: u64) -> Duration {
    crate::harness::on_roving(1, move || {
        let start = Instant::now();
        let yielders: Vec<_> = (0..2)
            .map(|_| {
                roving::strand::spawn(move || {
                    for _ in 0..yields {
                        roving::strand::yield_now().expect("a strand may yield");
                    }
                })
                .expect("a fibre for the strand")
            })
            .collect();
        for yielder in yielders {
            yielder.join().expect("the root strand may join");
        }
        start.elapsed()
    })
}

/// corosensei: resume a coroutine that suspends at once, `yields` times.
pub fn corosensei(yields: u64) -> Duration {
    let mut coroutine = corosensei::Coroutine::new(|yielder: &corosensei::Yielder<(), ()>, ()| {
        loop {
            yielder.suspend(());
        }
    });
    let start = Instant::now();
    for _ in 0..yields {
        let _ = black_box(coroutine.resume(()));
    }
    start.elapsed()
}

/// roving's bare [`context::resume`] and [`context::suspend`], `switches` times, with
/// `copy` bytes copied out of and back into a stack array on the other side
/// at every visit: the floor under a strand switch, with and without the
/// copying that copy-swap adds.
pub fn bare_switch(switches: u64, copy: usize) -> Duration {
    let mut stack = vec![0u128; 64 * 1024 / 16];
    let pair = Box::into_raw(Box::new(Pair {
        home: Context::empty(),
        away: Context::empty(),
        copy,
        save: vec![0; copy.max(1)],
    }));
    // SAFETY: the stack is ours, 64 KiB (more than `visit` needs), and
    // outlives every switch to the context made on it; `visit` never
    // returns, and is left suspended holding nothing that needs dropping.
    // Both sides reach the pair only through the raw pointer, one at a
    // time, and it is freed after the last switch back.
    unsafe {
        let top = stack.as_mut_ptr_range().end.cast::<u8>();
        (*pair).away = Context::new(top, visit, pair as usize);
        let start = Instant::now();
        for _ in 0..switches {
            context::resume(&raw const (*pair).away, &raw mut (*pair).home);
        }
        let elapsed = start.elapsed();
        drop(Box::from_raw(pair));
        elapsed
    }
}

struct Pair {
    home: Context,
    away: Context,
    copy: usize,
    save: Vec<u8>,
}

extern "C" fn visit(pair: usize) -> ! {
    let pair = pair as *mut Pair;
    let mut local = [7u8; 8192];
    loop {
        // SAFETY: `bare_switch` keeps the pair alive while it switches
        // here, and only one side runs at a time.
        unsafe {
            let copy = (*pair).copy;
            let save = (*pair).save.as_mut_ptr();
            std::ptr::copy_nonoverlapping(black_box(local.as_ptr()), save, copy);
            std::ptr::copy_nonoverlapping(save, black_box(local.as_mut_ptr()), copy);
            context::suspend(&raw mut (*pair).away, &raw const (*pair).home);
        }
        black_box(&mut local);
    }
}
