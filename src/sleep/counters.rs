//! The pool's packed sleep counters: one atomic word, so a core can count
//! itself asleep and check that no job was announced in one operation.
//!
//! | bits   | field                                                  |
//! |--------|--------------------------------------------------------|
//! | 0..32  | sleeping cores                                         |
//! | 32..64 | the jobs event counter (JEC)                           |
//!
//! Idle cores are counted elsewhere, by group (`super::idle_count`), so
//! the short idle spells of a busy pool do not write this word. The JEC's low bit says
//! whether work was announced since a core last got sleepy: even means
//! "sleepy" (no news), odd means "new work". It wraps; the final injector
//! check of the sleep protocol covers the case where a wrap makes a changed
//! counter look unchanged.

use crate::atomics::{AtomicU64, Ordering::SeqCst};

/// The most cores one pool can count.
pub const MAX_CORES: usize = 0xffff;

const SLEEPING_ONE: u64 = 1;
const JEC_SHIFT: u32 = 32;
const COUNT_MASK: u64 = 0xffff_ffff;

/// A snapshot of the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SleepCounters(u64);

impl SleepCounters {
    #[inline]
    pub fn sleeping(self) -> usize {
        (self.0 & COUNT_MASK) as usize
    }

    pub fn jobs_counter(self) -> u32 {
        (self.0 >> JEC_SHIFT) as u32
    }

    /// Some core got sleepy and no job was announced since (or none ever
    /// was): the JEC is even.
    #[inline]
    pub fn jec_is_sleepy(self) -> bool {
        self.jobs_counter() & 1 == 0
    }
}

/// The atomic word.
pub struct AtomicCounters(AtomicU64);

impl AtomicCounters {
    /// No sleeper; the JEC starts even (sleepy), so the first
    /// announcement writes it.
    pub fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    #[inline]
    pub fn load(&self) -> SleepCounters {
        SleepCounters(self.0.load(SeqCst))
    }

    /// Whoever ends a sleep (the waker, or the sleeper that cancels its own
    /// sleep) takes it off the count.
    pub fn sub_sleeping(&self) {
        self.0.fetch_sub(SLEEPING_ONE, SeqCst);
    }

    /// Counts one more sleeper, but only if the counters are still
    /// `expected` (so the JEC has not moved). On failure, returns the
    /// counters as they are.
    pub fn try_add_sleeping(&self, expected: SleepCounters) -> Result<(), SleepCounters> {
        match self.0.compare_exchange(expected.0, expected.0 + SLEEPING_ONE, SeqCst, SeqCst) {
            Ok(_) => Ok(()),
            Err(actual) => Err(SleepCounters(actual)),
        }
    }

    /// A core gets sleepy: if the JEC says "new work" (odd), move it to
    /// "sleepy" (even). Returns the JEC value the core then remembers, and
    /// how many compare-exchanges that took.
    pub fn get_sleepy(&self) -> (u32, u32) {
        let (counters, attempts) = self.update_jec_if(|c| !c.jec_is_sleepy());
        (counters.jobs_counter(), attempts)
    }

    /// Work was announced: if the JEC says "sleepy" (even), move it to "new
    /// work" (odd), so every sleepy core notices. Returns the counters
    /// after the update, and how many compare-exchanges that took.
    pub fn announce_jobs(&self) -> (SleepCounters, u32) {
        self.update_jec_if(SleepCounters::jec_is_sleepy)
    }

    fn update_jec_if(&self, should_increment: impl Fn(SleepCounters) -> bool) -> (SleepCounters, u32) {
        let mut now = self.load();
        let mut attempts = 0;
        loop {
            if !should_increment(now) {
                return (now, attempts);
            }
            let next = SleepCounters(now.0.wrapping_add(1 << JEC_SHIFT));
            attempts += 1;
            match self.0.compare_exchange_weak(now.0, next.0, SeqCst, SeqCst) {
                Ok(_) => return (next, attempts),
                Err(actual) => now = SleepCounters(actual),
            }
        }
    }
}
