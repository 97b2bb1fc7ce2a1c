//! The pool's packed sleep counters: one atomic word, so a core can change
//! its state and read everyone else's in one operation.
//!
//! | bits   | field                                                  |
//! |--------|--------------------------------------------------------|
//! | 0..16  | inactive cores (idle or sleeping)                      |
//! | 16..32 | sleeping cores                                         |
//! | 32..64 | the jobs event counter (JEC)                           |
//!
//! Idle-but-awake cores are `inactive - sleeping`. The JEC's low bit says
//! whether work was announced since a core last got sleepy: even means
//! "sleepy" (no news), odd means "new work". It wraps; the final injector
//! check of the sleep protocol covers the case where a wrap makes a changed
//! counter look unchanged.

use crate::atomics::{AtomicU64, Ordering::SeqCst};

/// The most cores one pool can count.
pub const MAX_CORES: usize = 0xffff;

const INACTIVE_ONE: u64 = 1;
const SLEEPING_ONE: u64 = 1 << 16;
const JEC_SHIFT: u32 = 32;
const COUNT_MASK: u64 = 0xffff;

/// A snapshot of the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counters(u64);

impl Counters {
    #[inline]
    pub fn inactive(self) -> usize {
        (self.0 & COUNT_MASK) as usize
    }

    pub fn sleeping(self) -> usize {
        (self.0 >> 16 & COUNT_MASK) as usize
    }

    /// Cores searching for work, awake. A core is counted as sleeping only
    /// inside its idle stretch (a claimed core stays `CLAIMED` until its
    /// waker has taken it off the count, `crate::sleep`), so `sleeping`
    /// never exceeds `inactive`; the saturation only guards that.
    pub fn idle_awake(self) -> usize {
        self.inactive().saturating_sub(self.sleeping())
    }

    pub fn jobs_counter(self) -> u32 {
        (self.0 >> JEC_SHIFT) as u32
    }

    fn jec_is_sleepy(self) -> bool {
        self.jobs_counter() & 1 == 0
    }
}

/// The atomic word.
pub struct AtomicCounters(AtomicU64);

impl AtomicCounters {
    pub fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    #[inline]
    pub fn load(&self) -> Counters {
        Counters(self.0.load(SeqCst))
    }

    /// A core starts searching.
    pub fn add_inactive(&self) -> Counters {
        Counters(self.0.fetch_add(INACTIVE_ONE, SeqCst) + INACTIVE_ONE)
    }

    /// A core found work.
    pub fn sub_inactive(&self) {
        self.0.fetch_sub(INACTIVE_ONE, SeqCst);
    }

    /// Whoever ends a sleep (the waker, or the sleeper that cancels its own
    /// sleep) takes it off the count.
    pub fn sub_sleeping(&self) {
        self.0.fetch_sub(SLEEPING_ONE, SeqCst);
    }

    /// Counts one more sleeper, but only if the counters are still
    /// `expected` (so the JEC has not moved). On failure, returns the
    /// counters as they are.
    pub fn try_add_sleeping(&self, expected: Counters) -> Result<(), Counters> {
        match self.0.compare_exchange(expected.0, expected.0 + SLEEPING_ONE, SeqCst, SeqCst) {
            Ok(_) => Ok(()),
            Err(actual) => Err(Counters(actual)),
        }
    }

    /// A core gets sleepy: if the JEC says "new work" (odd), move it to
    /// "sleepy" (even). Returns the JEC value the core then remembers.
    pub fn get_sleepy(&self) -> u32 {
        self.update_jec_if(|c| !c.jec_is_sleepy()).jobs_counter()
    }

    /// Work was announced: if the JEC says "sleepy" (even), move it to "new
    /// work" (odd), so every sleepy core notices. Returns the counters
    /// after the update.
    pub fn announce_jobs(&self) -> Counters {
        self.update_jec_if(Counters::jec_is_sleepy)
    }

    fn update_jec_if(&self, should_increment: impl Fn(Counters) -> bool) -> Counters {
        let mut now = self.load();
        loop {
            if !should_increment(now) {
                return now;
            }
            let next = Counters(now.0.wrapping_add(1 << JEC_SHIFT));
            match self.0.compare_exchange_weak(now.0, next.0, SeqCst, SeqCst) {
                Ok(_) => return next,
                Err(actual) => now = Counters(actual),
            }
        }
    }
}
