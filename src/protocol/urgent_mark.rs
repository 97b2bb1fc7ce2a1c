//! A core's urgent mark: how a strand woken on any core, or in an
//! interrupt handler, tells the core it was queued for that it outranks
//! the strand running there, so that the core's next tick preempts at once
//! (`crate::preempt`). The protocol alone, so loom can check it
//! (`tests/loom_urgent.rs`).
//!
//! # Protocol
//!
//! Two bytes per core. `running` is the level of the strand the core runs,
//! or [`NO_STRAND`]; only the core writes it, as it switches strands.
//! `urgent` is one more than the highest level woken for the core that
//! outranked its running strand, or 0.
//!
//! - **Woken** (any core, any handler): a strand of level `l` is queued
//!   for the core. If `running` is a strand of a level below `l`, raise
//!   `urgent` to at least `l + 1` (`fetch_max`) and answer `true`: the
//!   waker then asks for a tick on that core.
//! - **Tick** (the core's timer interrupt, on the core): take the mark
//!   (`swap` to 0). The running strand, of priority `p`, is outranked if
//!   the mark was above `p + 1`.
//! - **Kept** (a tick that cannot preempt now, because the strand is
//!   inside roving's own code): put the mark back (`fetch_max`), for the
//!   retry tick.
//!
//! # Why a mark is never lost
//!
//! Every change to `urgent` is a read-modify-write, so they are totally
//! ordered, and only a tick sets it lower (to 0), taking what it held.
//! So a mark that a waker raised is either still there or was taken by a
//! tick after it; that tick either preempted the strand or put the mark
//! back, raising `urgent` again to at least the mark (`fetch_max` loses
//! no raise that came between the take and the put-back). The tick the
//! waker asks for comes after its raise, so it, or the retry after it,
//! takes the mark.
//!
//! A mark may outlive the strand it was meant for: the core may switch
//! strands before its tick, even to the woken strand itself. That costs
//! at most one early preemption of a strand below the woken level, and
//! never preempts a strand at or above it (the mark is `l + 1`, and a
//! strand of priority `p >= l` is outranked only by a mark above
//! `p + 1`).

use crate::atomics::{AtomicU8, Ordering::Relaxed, Ordering::SeqCst};

/// `running` of a core that runs no strand.
pub const NO_STRAND: u8 = u8::MAX;

/// One core's mark (module docs).
pub struct UrgentMark {
    running: AtomicU8,
    urgent: AtomicU8,
}

/// What a tick took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Taken {
    /// The mark, to put back if the tick cannot act on it.
    pub mark: u8,
    /// Whether it outranks the running strand.
    pub outranked: bool,
}

impl UrgentMark {
    /// A core that runs nothing, unmarked.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self { running: AtomicU8::new(NO_STRAND), urgent: AtomicU8::new(0) }
    }

    /// A core that runs nothing, unmarked (loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        Self { running: AtomicU8::new(NO_STRAND), urgent: AtomicU8::new(0) }
    }

    /// The core now runs a strand of `level`, or none.
    pub fn running(&self, level: Option<u8>) {
        self.running.store(level.unwrap_or(NO_STRAND), Relaxed);
    }

    /// A strand of `level` was queued for this core: marks it if that
    /// outranks the running strand, and says so.
    pub fn woken(&self, level: u8) -> bool {
        let running = self.running.load(Relaxed);
        if running == NO_STRAND || level <= running {
            return false;
        }
        self.urgent.fetch_max(level + 1, SeqCst);
        true
    }

    /// The tick takes the mark, for a running strand of priority
    /// `priority`.
    pub fn take(&self, priority: u8) -> Taken {
        let mark = self.urgent.swap(0, SeqCst);
        Taken { mark, outranked: mark > priority.saturating_add(1) }
    }

    /// A tick that could not act puts back what it took.
    pub fn keep(&self, taken: Taken) {
        if taken.mark != 0 {
            self.urgent.fetch_max(taken.mark, SeqCst);
        }
    }
}

impl Default for UrgentMark {
    fn default() -> Self {
        Self::new()
    }
}
