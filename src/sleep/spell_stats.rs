//! What each core's idle spells cost the pool's shared sleep counters:
//! counted per core, so the count itself adds no shared write.
//!
//! These are statistics, not part of the protocol: they use the core's own
//! atomics even under loom, so the models do not explore them.

use crate::atomics::unmodelled::{AtomicU64, Ordering::Relaxed};

/// One core's figures ([`crate::CoreStats`] shows them).
#[derive(Default)]
pub struct SpellStats {
    /// Times the core ran out of work and started searching.
    pub idle_spells: AtomicU64,
    /// Of those, spells that outlasted the quiet rounds and were counted in
    /// the shared counters.
    pub counted_spells: AtomicU64,
    /// Read-modify-writes of the pool-wide counters word made for this
    /// core: getting sleepy, counting its sleeps in and out (a waker's
    /// taking it off the count included) and announcing the jobs it made.
    /// (A counted spell also writes its group's idle count twice.)
    pub shared_writes: AtomicU64,
}

impl SpellStats {
    /// Adds `n` to one of these figures. A core adds to its own (a woken
    /// core adds its waker's share on waking), and cores outside the pool
    /// to the shared slot, hence the read-modify-write; each core's
    /// figures are on a line of their own.
    #[inline]
    pub fn add(figure: &AtomicU64, n: u64) {
        if n > 0 {
            figure.fetch_add(n, Relaxed);
        }
    }

    /// The three figures: spells, counted spells, shared writes.
    pub fn read(&self) -> (u64, u64, u64) {
        (self.idle_spells.load(Relaxed), self.counted_spells.load(Relaxed), self.shared_writes.load(Relaxed))
    }
}
