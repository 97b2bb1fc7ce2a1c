//! Delays injected at the steps of the scheduler's concurrent protocols,
//! to open the windows that a quiet machine keeps shut (feature `chaos`,
//! for tests only).
//!
//! A race between two steps of a protocol shows up only when a core loses
//! its CPU between them: an interrupt, a cache miss, preemption on
//! hardware; on the host, an oversubscribed machine taking a thread off its
//! CPU. A [`point`] marks such a step. With the feature on, each point
//! yields the thread, spins, or sleeps, at random and often, so a stress
//! test meets in seconds interleavings that a loaded machine meets once in
//! hundreds of runs. Without the feature a point compiles to nothing.
//!
//! The delays are chosen per thread from a seeded generator: set
//! `ROVING_CHAOS_SEED` to vary the seed of a run (the default is fixed).

/// A step of a protocol where losing the CPU may matter.
#[inline(always)]
pub(crate) fn point() {
    #[cfg(all(feature = "chaos", not(loom)))]
    imp::point();
}

#[cfg(all(feature = "chaos", not(loom)))]
mod imp {
    use std::cell::Cell;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::time::Duration;

    fn base_seed() -> u64 {
        static SEED: OnceLock<u64> = OnceLock::new();
        *SEED.get_or_init(|| {
            std::env::var("ROVING_CHAOS_SEED")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0x9e37_79b9_7f4a_7c15)
        })
    }

    thread_local! {
        static STATE: Cell<u64> = const { Cell::new(0) };
    }

    fn next() -> u64 {
        static THREADS: AtomicU64 = AtomicU64::new(1);
        STATE.with(|state| {
            let mut x = state.get();
            if x == 0 {
                x = (base_seed() ^ THREADS.fetch_add(1, Relaxed).wrapping_mul(0xd1b5_4a32_d192_ed03)) | 1;
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            state.set(x);
            x
        })
    }

    pub(super) fn point() {
        let roll = next();
        if roll % 65_536 == 0 {
            // Lose the CPU for a scheduler's time slice: other cores run
            // whole workloads meanwhile.
            std::thread::sleep(Duration::from_millis(2 + (roll >> 16) % 3));
            return;
        }
        match roll % 1024 {
            // Lose the CPU for a long while: another core runs many steps.
            0..=1 => std::thread::sleep(Duration::from_micros(50 + (roll >> 10) % 500)),
            // Lose it briefly.
            2..=63 => std::thread::yield_now(),
            // Run slowly: a cache miss or an interrupt's worth.
            64..=191 => {
                for _ in 0..(roll >> 10) % 2000 {
                    core::hint::spin_loop();
                }
            }
            _ => {}
        }
    }
}
