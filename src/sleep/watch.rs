//! The timer watch: which sleeping core wakes at the earliest deadline.
//!
//! An idle pool keeps exactly one sleeping core, the *watcher*, sleeping
//! with the earliest deadline as its wake-up time; every other core sleeps
//! without one, so sleeping strands keep at most one core's timer armed.
//!
//! # Protocol
//!
//! - `earliest` holds the earliest deadline (in ticks), or `NONE`.
//! - Publisher (a core that changed the deadlines): swap the new earliest
//!   deadline into `earliest`; if it is earlier than what was there, load
//!   `watcher` and ring that core.
//! - Watcher-to-be (a core about to sleep): compare-exchange `watcher` from
//!   `NO_WATCHER` to itself (or find itself already there), then load
//!   `earliest` and sleep until it.
//! - A watcher that wakes for any reason runs `unwatch` before it looks
//!   for work, and watches again (reading `earliest` afresh) before it
//!   sleeps again.
//!
//! # Why no deadline is missed
//!
//! All four accesses are seq-cst, and each side has a seq-cst fence
//! between its write and its read, so they fall in one total order. (The
//! fences add nothing to the C++ model for seq-cst accesses, but loom
//! treats seq-cst loads and stores as acquire/release and honours only the
//! fences; with them, the model checks the protocol as it runs.) Take a
//! publisher that lowered `earliest` to `d` while a core becomes watcher.
//! If the watcher's load of `earliest` comes after the publisher's swap,
//! it reads `d` (or something earlier) and sleeps until then. Otherwise
//! the load came before the swap, so the watcher's compare-exchange came
//! before the swap too, and the publisher's later load of `watcher` finds
//! it and rings it; a ring that arrives before the watcher sleeps is kept
//! by its doorbell, so it does not sleep past `d`. A publisher whose swap
//! did not lower the deadline rings nobody: whoever watches already sleeps
//! until something no later. (`tests/loom_watch.rs` checks this.)

use crate::atomics::{AtomicU64, AtomicUsize, Ordering::SeqCst, fence};

/// No deadline.
pub const NONE: u64 = u64::MAX;
const NO_WATCHER: usize = usize::MAX;

/// The earliest deadline and the core that watches it.
pub struct Watch {
    earliest: AtomicU64,
    watcher: AtomicUsize,
}

impl Default for Watch {
    fn default() -> Self {
        Self::new()
    }
}

impl Watch {
    /// No deadline, no watcher.
    pub fn new() -> Self {
        Self { earliest: AtomicU64::new(NONE), watcher: AtomicUsize::new(NO_WATCHER) }
    }

    /// Publishes `earliest` (ticks, or [`NONE`]) as the earliest deadline.
    /// Returns the core to ring: the watcher, if the deadline moved earlier
    /// and there is one.
    pub fn publish(&self, earliest: u64) -> Option<usize> {
        if self.earliest.swap(earliest, SeqCst) <= earliest {
            return None;
        }
        fence(SeqCst);
        let watcher = self.watcher.load(SeqCst);
        (watcher != NO_WATCHER).then_some(watcher)
    }

    /// The earliest deadline, or [`NONE`].
    pub fn earliest(&self) -> u64 {
        self.earliest.load(SeqCst)
    }

    /// Makes `core` the watcher if there is none. Returns the deadline it
    /// must wake at if it is the watcher ([`NONE`] if there is none), or
    /// `None` if another core watches.
    pub fn watch(&self, core: usize) -> Option<u64> {
        let mine = match self.watcher.compare_exchange(NO_WATCHER, core, SeqCst, SeqCst) {
            Ok(_) => true,
            Err(current) => current == core,
        };
        mine.then(|| {
            fence(SeqCst);
            self.earliest.load(SeqCst)
        })
    }

    /// `core` stops watching, if it was the watcher; returns whether it
    /// was.
    pub fn unwatch(&self, core: usize) -> bool {
        self.watcher.compare_exchange(core, NO_WATCHER, SeqCst, SeqCst).is_ok()
    }
}
